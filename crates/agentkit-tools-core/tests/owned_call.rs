//! A call's future held with the tool it borrows (`ExecuteFuture::invoke`,
//! what `BasicToolExecutor::execute_shared` returns): the tool outlives its
//! future however the call ends (finished, dropped mid-way, panicked),
//! even when the future holds the tool's last reference; nothing runs
//! before the first poll; the output cut still applies.
//!
//! No runtime: the futures are polled by hand, so these tests also run
//! under Miri, which reports a use after free or an aliasing violation
//! (`cargo +nightly miri test -p agentkit-tools-core --test owned_call`).

use agentkit_core::{CancellationController, ToolOutput};
use agentkit_tools_core::{
    BasicToolExecutor, ExecuteFuture, Preflight, Tool, ToolContext, ToolError, ToolExecutor,
    ToolFederation, ToolRequest, ToolResult, ToolSpec, dynamic_catalog,
};
use serde_json::json;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// What happened, in order, across the tool and its futures.
type Journal = Arc<Mutex<Vec<String>>>;

/// A tool whose future reads the tool (`&self`) before, between and after
/// its awaits, and from a guard's `Drop` (also when the call is dropped
/// mid-way), and says when it is dropped itself.
struct Borrowing {
    spec: Arc<ToolSpec>,
    /// Read through the future's borrow of the tool.
    greeting: String,
    /// How many times the future waits before it answers.
    waits: usize,
    /// Panics after the first wait when `true`.
    panics: bool,
    journal: Journal,
}

impl Borrowing {
    fn new(journal: &Journal, waits: usize) -> Self {
        Self {
            spec: Arc::new(
                ToolSpec::new(
                    "borrowing",
                    "reads itself across awaits",
                    json!({ "type": "object", "properties": { "text": { "type": "string" } } }),
                )
                .unwrap(),
            ),
            greeting: "hello".repeat(4),
            waits,
            panics: false,
            journal: journal.clone(),
        }
    }

    fn note(&self, what: impl Into<String>) {
        self.journal.lock().unwrap().push(what.into());
    }
}

impl Drop for Borrowing {
    fn drop(&mut self) {
        self.note("tool dropped");
    }
}

/// Reads the tool when the future is dropped, finished or not.
struct Guard<'t>(&'t Borrowing);

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        // A read through the borrow: after the tool's last `Arc` went, this
        // is a use after free (Miri names it).
        let len = self.0.greeting.len();
        self.0.note(format!("future dropped ({len})"));
    }
}

#[async_trait::async_trait]
impl Tool for Borrowing {
    fn spec(&self) -> Arc<ToolSpec> {
        self.spec.clone()
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let _guard = Guard(self);
        let mut seen = String::new();
        for wait in 0..self.waits {
            seen.push_str(&self.greeting[..wait + 1]);
            YieldOnce(false).await;
            self.note(format!("waited {wait}"));
            if self.panics {
                panic!("the tool broke");
            }
        }
        let text = request.input["text"].as_str().unwrap_or_default();
        Ok(ToolResult::new(format!("{seen}|{}|{text}", self.greeting)))
    }
}

/// Pending once (waking itself), then ready.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

fn poll(call: &mut ExecuteFuture) -> Poll<Result<ToolResult, ToolError>> {
    Pin::new(call).poll(&mut Context::from_waker(Waker::noop()))
}

fn run(mut call: ExecuteFuture) -> Result<ToolResult, ToolError> {
    loop {
        if let Poll::Ready(outcome) = poll(&mut call) {
            return outcome;
        }
    }
}

fn request(text: &str) -> ToolRequest {
    ToolRequest::new("call-1", "borrowing", json!({ "text": text }))
}

fn journal() -> Journal {
    Journal::default()
}

fn entries(journal: &Journal) -> Vec<String> {
    journal.lock().unwrap().clone()
}

/// The executor's future for a ready call of `tool`, from a dynamic
/// catalog the tool is then removed from, and with the executor dropped:
/// the call holds the tool's last reference.
fn last_reference_call(tool: Borrowing, text: &str) -> ExecuteFuture {
    let (writer, reader) = dynamic_catalog("plugins");
    writer.add(Arc::new(tool)).unwrap();
    let executor = Arc::new(BasicToolExecutor::new(
        ToolFederation::new().with_source(reader),
    ));
    let (preflight, found) = executor.preflight_validated(&request(text));
    assert_eq!(preflight, Preflight::Ready);
    assert!(found.is_some(), "a ready call names its tool");
    let call = executor.execute_shared(request(text), ToolContext::detached(), None, found);
    assert!(writer.remove("borrowing"));
    drop(writer);
    call
}

#[test]
fn a_future_that_borrows_its_tool_across_awaits_runs_on_its_last_reference() {
    let journal = journal();
    let call = last_reference_call(Borrowing::new(&journal, 3), "hi");
    assert!(entries(&journal).is_empty(), "nothing ran before the poll");
    let result = run(call).unwrap();
    assert_eq!(
        result.output,
        ToolOutput::Text("hhehel|hellohellohellohello|hi".into())
    );
    assert_eq!(
        entries(&journal),
        [
            "waited 0",
            "waited 1",
            "waited 2",
            "future dropped (20)",
            "tool dropped"
        ]
    );
}

#[test]
fn a_call_dropped_mid_way_drops_its_future_before_its_tool() {
    let journal = journal();
    let mut call = last_reference_call(Borrowing::new(&journal, 3), "hi");
    assert!(poll(&mut call).is_pending());
    assert!(poll(&mut call).is_pending());
    assert_eq!(entries(&journal), ["waited 0"]);
    drop(call);
    assert_eq!(
        entries(&journal),
        ["waited 0", "future dropped (20)", "tool dropped"]
    );
}

#[test]
fn a_call_dropped_before_its_first_poll_runs_nothing() {
    let journal = journal();
    drop(last_reference_call(Borrowing::new(&journal, 1), "hi"));
    assert_eq!(entries(&journal), ["tool dropped"]);
}

#[test]
fn a_panicking_tool_leaves_a_call_that_drops_in_order() {
    let journal = journal();
    let mut tool = Borrowing::new(&journal, 2);
    tool.panics = true;
    let mut call = last_reference_call(tool, "hi");
    assert!(poll(&mut call).is_pending());
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| poll(&mut call)));
    assert!(panicked.is_err(), "the tool's panic reaches the poller");
    // Unwinding dropped the future's locals, the tool still alive.
    assert_eq!(entries(&journal), ["waited 0", "future dropped (20)"]);
    drop(call);
    assert_eq!(
        entries(&journal),
        ["waited 0", "future dropped (20)", "tool dropped"]
    );
}

#[test]
fn a_call_whose_turn_was_cancelled_before_its_first_poll_runs_nothing() {
    let journal = journal();
    let controller = CancellationController::new();
    let mut ctx = ToolContext::detached();
    ctx.cancellation = controller.handle().checkpoint();
    let tool: Arc<dyn Tool> = Arc::new(Borrowing::new(&journal, 1));
    let call = ExecuteFuture::invoke(tool, request("hi"), ctx, None);
    // Cancelled after the call was made, before it ran.
    controller.interrupt();
    assert_eq!(run(call), Err(ToolError::Cancelled));
    assert_eq!(entries(&journal), ["tool dropped"]);
}

#[test]
fn the_output_cut_applies_to_the_tools_own_future() {
    let journal = journal();
    let tool: Arc<dyn Tool> = Arc::new(Borrowing::new(&journal, 0));
    let cut = run(ExecuteFuture::invoke(
        tool.clone(),
        request("hi"),
        ToolContext::detached(),
        Some(4),
    ))
    .unwrap();
    assert_eq!(
        cut.output.to_text(),
        "|hel\n[output truncated: 20 more bytes cut]"
    );

    // Through the executor's own path, with its budget.
    let (writer, reader) = dynamic_catalog("plugins");
    writer.add(tool).unwrap();
    let executor = Arc::new(
        BasicToolExecutor::new(ToolFederation::new().with_source(reader))
            .with_max_output_bytes(Some(6)),
    );
    let (_, found) = executor.preflight_validated(&request("hi"));
    let call = executor.execute_shared(request("hi"), ToolContext::detached(), None, found);
    assert_eq!(
        run(call).unwrap().output.to_text(),
        "|hello\n[output truncated: 18 more bytes cut]"
    );
}

#[test]
fn a_refused_call_settles_without_running() {
    let journal = journal();
    let (writer, reader) = dynamic_catalog("plugins");
    writer.add(Arc::new(Borrowing::new(&journal, 1))).unwrap();
    let executor = Arc::new(BasicToolExecutor::new(
        ToolFederation::new().with_source(reader),
    ));
    let bad = ToolRequest::new("call-2", "borrowing", json!({ "text": 5 }));
    let call = executor
        .clone()
        .execute_shared(bad, ToolContext::detached(), None, None);
    assert_eq!(
        run(call),
        Err(ToolError::InvalidInput(
            "`/text`: expected string, got integer".into()
        ))
    );
    let missing = ToolRequest::new("call-3", "missing", json!({}));
    let call = executor.execute_shared(missing, ToolContext::detached(), None, None);
    assert_eq!(run(call), Err(ToolError::NotFound("missing".into())));
    assert!(entries(&journal).is_empty(), "the tool never ran");
}
