//! Session store benchmarks, printed as a table: append throughput, resume
//! of a 10,000-item session, and the cost the store adds to one S1 round,
//! for SQLite (a file) and PostgreSQL (a throwaway local server).
//!
//! Run with `cargo xtask bench` or `cargo bench -p agentkit-store --bench
//! store`. Each figure is the median of several repetitions.

use agentkit_core::{FinishReason, Item, ItemKind, Part, ToolCallPart, ToolResultPart, Usage};
use agentkit_loop::{Agent, LoopInterrupt, LoopStep, SessionConfig};
use agentkit_store::{
    Checkpoint, LeaseToken, LogEntry, LogWriter, NewSession, PgStore, SessionInfo, SessionLease,
    SessionStore, SqliteStore, StoreResult, StoredSession,
};
use agentkit_testkit::{EchoTool, ScriptedModel, ScriptedTurn};
use agentkit_tools_core::ToolRegistry;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn tools() -> ToolRegistry {
    ToolRegistry::new().with(EchoTool::new())
}

/// One S1 model turn: four text chunks and an `echo` call.
fn tool_turn(index: usize) -> ScriptedTurn {
    ScriptedTurn::new()
        .say_chunks(&["Let", " me", " check", "."])
        .call(&format!("call-{index}"), "echo", json!({ "text": "hi" }))
        .finish(FinishReason::ToolCall)
}

/// `pairs` answered calls: a realistic long transcript.
fn history(pairs: usize) -> Vec<Item> {
    let mut items = Vec::with_capacity(pairs * 2 + 1);
    items.push(Item::user("bench"));
    for i in 0..pairs {
        let id = format!("old-{i}");
        let mut call = Item::new(
            ItemKind::Assistant,
            vec![Part::ToolCall(ToolCallPart::new(
                id.clone(),
                "echo",
                json!({ "text": "hi" }),
            ))],
        );
        call.id = Some(format!("item-{}", 2 * i + 1).into());
        let mut result = Item::tool_result(ToolResultPart::success(id, "echo: hi"));
        result.id = Some(format!("item-{}", 2 * i + 2).into());
        items.push(call);
        items.push(result);
    }
    items
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

type Open = Box<dyn Fn() -> std::pin::Pin<Box<dyn Future<Output = Arc<dyn SessionStore>>>>>;

/// Items per second through the append path, flushed at the end.
async fn append_throughput(open: &Open, items: usize) -> f64 {
    let store = open().await;
    let lease = SessionLease::create(store.clone(), NewSession::new())
        .await
        .unwrap();
    let writer = store.log_writer(lease.token());
    let transcript = history(items / 2);
    let started = Instant::now();
    for (index, item) in transcript.iter().enumerate() {
        writer.write(LogEntry::Item {
            index,
            item: item.clone(),
        });
    }
    writer.flush().await.unwrap();
    let rate = transcript.len() as f64 / started.elapsed().as_secs_f64();
    lease.release().await.unwrap();
    rate
}

/// Milliseconds to load a 10,000-item session, and to open (load, rebuild,
/// resume, checkpoint) it.
async fn resume_10k(open: &Open) -> (f64, f64) {
    let store = open().await;
    let lease = SessionLease::create(store.clone(), NewSession::new())
        .await
        .unwrap();
    let id = lease.session_id().clone();
    // A checkpoint of a driver idle after a 10,000-item transcript.
    let mut items = history(4_999);
    items.push(Item::assistant("done"));
    let agent = Agent::builder()
        .model(ScriptedModel::new([]))
        .add_tool_source(tools())
        .transcript(items.clone())
        .build()
        .unwrap();
    let mut snapshot = agent
        .start(SessionConfig::new(id.clone()))
        .await
        .unwrap()
        .snapshot();
    snapshot.transcript.clear();
    store
        .save(
            lease.token(),
            Checkpoint {
                snapshot_json: serde_json::to_string(&snapshot).unwrap(),
                snapshot_version: snapshot.version,
                transcript_len: items.len(),
                items: Some((0, &items)),
                usage: &Usage::default(),
                title: None,
                archived: &[],
            },
        )
        .await
        .unwrap();
    lease.release().await.unwrap();
    let mut loads = Vec::new();
    let mut opens = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        assert_eq!(store.load(&id).await.unwrap().items.len(), 10_000);
        loads.push(started.elapsed().as_secs_f64() * 1e3);
        let lease = SessionLease::acquire(store.clone(), &id).await.unwrap();
        let agent = lease
            .record(
                Agent::builder()
                    .model(ScriptedModel::new([]))
                    .add_tool_source(tools()),
            )
            .build()
            .unwrap();
        let started = Instant::now();
        let session = lease.open(&agent).await.unwrap();
        opens.push(started.elapsed().as_secs_f64() * 1e3);
        assert_eq!(session.transcript().len(), 10_000);
        session.close().await.unwrap();
    }
    (median(loads), median(opens))
}

/// µs per S1 round (model turn + echo call), without and with the store,
/// after `preload` items of history.
async fn s1_round(open: Option<&Open>, preload: usize, rounds: usize) -> f64 {
    let model = ScriptedModel::new(
        (0..rounds)
            .map(tool_turn)
            .chain([ScriptedTurn::text("done")]),
    )
    .without_recording();
    let builder = Agent::builder()
        .model(model)
        .add_tool_source(tools())
        .max_model_calls(10_000) // one long turn, past the default step limit
        .transcript(if preload == 0 {
            Vec::new()
        } else {
            history(preload / 2)
        })
        .input(vec![Item::user("go")]);
    let mut times = Vec::with_capacity(rounds);
    let mut time_step = |started: Instant, step: LoopStep| match step {
        LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => {
            times.push(started.elapsed().as_secs_f64() * 1e6);
            true
        }
        LoopStep::Finished(_) => false,
        other => panic!("unexpected {other:?}"),
    };
    match open {
        None => {
            let agent = builder.build().unwrap();
            let mut driver = agent.start(SessionConfig::new("s1")).await.unwrap();
            while time_step(Instant::now(), driver.next().await.unwrap()) {}
        }
        Some(open) => {
            let lease = SessionLease::create(open().await, NewSession::new())
                .await
                .unwrap();
            let agent = lease.record(builder).build().unwrap();
            let mut session = lease.open(&agent).await.unwrap();
            while time_step(Instant::now(), session.next().await.unwrap()) {}
            session.close().await.unwrap();
        }
    }
    median(times)
}

async fn run(name: &str, open: Open) {
    let appends = median(vec![
        append_throughput(&open, 2_000).await,
        append_throughput(&open, 2_000).await,
        append_throughput(&open, 2_000).await,
    ]);
    println!("| {name} | append, items/s | {appends:.0} |");
    let (load, resume) = resume_10k(&open).await;
    println!("| {name} | 10,000 items: load / open (resume), ms | {load:.1} / {resume:.1} |");
    for preload in [0, 10_000] {
        let bare = s1_round(None, preload, 200).await;
        let stored = s1_round(Some(&open), preload, 200).await;
        println!(
            "| {name} | S1 round after {preload} items, without / with the store, µs | {bare:.1} / {stored:.1} (+{:.1}) |",
            stored - bare
        );
    }
}

/// Transactions PostgreSQL committed per S1 round (every statement
/// outside a transaction commits on its own; each is a round trip at
/// least), from the server's statistics: the store's connections are
/// closed first, so their counts are reported.
async fn pg_commits_per_round(cluster: &agentkit_testkit::pg::TempCluster, open: &Open) -> f64 {
    async fn committed(conninfo: &str) -> i64 {
        let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
            .await
            .unwrap();
        let connection = tokio::spawn(connection);
        let count: i64 = client
            .query_one(
                "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        drop(client);
        let _ = connection.await;
        count
    }
    const ROUNDS: usize = 200;
    let settle = || tokio::time::sleep(std::time::Duration::from_millis(500));
    settle().await;
    let before = committed(&cluster.conninfo()).await;
    s1_round(Some(open), 0, ROUNDS).await;
    // The pool's connections close with the store, reporting their counts.
    settle().await;
    let after = committed(&cluster.conninfo()).await;
    // The first count's own transaction is in the second.
    (after - before - 1) as f64 / ROUNDS as f64
}

/// A SQLite store that counts its commits: each log write (an entry, or
/// what the recorder hands over together) and each save is one
/// transaction; reads are not counted.
struct CountCommits {
    inner: SqliteStore,
    commits: Arc<AtomicU64>,
}

struct CountingWriter {
    inner: Arc<dyn LogWriter>,
    commits: Arc<AtomicU64>,
}

#[async_trait::async_trait]
impl LogWriter for CountingWriter {
    fn write(&self, entry: LogEntry) {
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.inner.write(entry);
    }

    fn write_all(&self, entries: Vec<LogEntry>) {
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.inner.write_all(entries);
    }

    async fn flush(&self) -> StoreResult<()> {
        self.inner.flush().await
    }

    fn stored(&self) -> Option<StoreResult<()>> {
        self.inner.stored()
    }
}

#[async_trait::async_trait]
impl SessionStore for CountCommits {
    async fn create(&self, new: NewSession) -> StoreResult<SessionInfo> {
        self.inner.create(new).await
    }
    async fn acquire(
        &self,
        id: &agentkit_core::SessionId,
        ttl: Duration,
    ) -> StoreResult<LeaseToken> {
        self.inner.acquire(id, ttl).await
    }
    async fn renew(&self, lease: &LeaseToken) -> StoreResult<()> {
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.inner.renew(lease).await
    }
    async fn release(&self, lease: &LeaseToken) -> StoreResult<()> {
        self.inner.release(lease).await
    }
    fn log_writer(&self, lease: &LeaseToken) -> Arc<dyn LogWriter> {
        Arc::new(CountingWriter {
            inner: self.inner.log_writer(lease),
            commits: self.commits.clone(),
        })
    }
    async fn save(&self, lease: &LeaseToken, checkpoint: Checkpoint<'_>) -> StoreResult<()> {
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.inner.save(lease, checkpoint).await
    }
    async fn load(&self, id: &agentkit_core::SessionId) -> StoreResult<StoredSession> {
        self.inner.load(id).await
    }
    async fn archived(&self, id: &agentkit_core::SessionId) -> StoreResult<Vec<Item>> {
        self.inner.archived(id).await
    }
    async fn info(&self, id: &agentkit_core::SessionId) -> StoreResult<SessionInfo> {
        self.inner.info(id).await
    }
    async fn list(&self) -> StoreResult<Vec<SessionInfo>> {
        self.inner.list().await
    }
    async fn fork(
        &self,
        id: &agentkit_core::SessionId,
        at: usize,
        new: NewSession,
    ) -> StoreResult<SessionInfo> {
        self.inner.fork(id, at, new).await
    }
    async fn append_inputs(
        &self,
        lease: &LeaseToken,
        from: usize,
        lines: &[String],
    ) -> StoreResult<()> {
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.inner.append_inputs(lease, from, lines).await
    }
    async fn input_lines(&self, id: &agentkit_core::SessionId) -> StoreResult<Vec<String>> {
        self.inner.input_lines(id).await
    }
    async fn delete(&self, id: &agentkit_core::SessionId) -> StoreResult<()> {
        self.inner.delete(id).await
    }
}

/// Commits SQLite makes per S1 round (the session's opening and closing
/// included, spread over the rounds).
async fn sqlite_commits_per_round(path: &std::path::Path) -> f64 {
    const ROUNDS: usize = 200;
    let commits = Arc::new(AtomicU64::new(0));
    let counted = commits.clone();
    let path = path.to_owned();
    let open: Open = Box::new(move || {
        let store = CountCommits {
            inner: SqliteStore::open(&path).unwrap(),
            commits: counted.clone(),
        };
        Box::pin(async move { Arc::new(store) as Arc<dyn SessionStore> })
    });
    s1_round(Some(&open), 0, ROUNDS).await;
    commits.load(Ordering::Relaxed) as f64 / ROUNDS as f64
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!("| backend | measure | median |");
    println!("| --- | --- | --- |");
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.db");
        let commits = sqlite_commits_per_round(&dir.path().join("counted.db")).await;
        println!("| SQLite (file) | commits per S1 round (setup included) | {commits:.2} |");
        run(
            "SQLite (file)",
            Box::new(move || {
                let path = path.clone();
                Box::pin(async move {
                    Arc::new(SqliteStore::open(&path).unwrap()) as Arc<dyn SessionStore>
                })
            }),
        )
        .await;
        let cluster = Arc::new(agentkit_testkit::pg::TempCluster::start());
        let opening = cluster.clone();
        let open: Open = Box::new(move || {
            let cluster = opening.clone();
            Box::pin(async move {
                Arc::new(PgStore::connect(&cluster.conninfo()).await.unwrap())
                    as Arc<dyn SessionStore>
            })
        });
        let commits = pg_commits_per_round(&cluster, &open).await;
        println!(
            "| PostgreSQL (Unix socket) | transactions committed per S1 round (setup included) | {commits:.2} |"
        );
        run("PostgreSQL (Unix socket)", open).await;
    });
}
