//! The MCP reference server over streamable HTTP: our HTTP client against
//! the official TypeScript SDK's server, not just rmcp's. The server is
//! made to listen on 127.0.0.1 only (`tests/fixtures/loopback.cjs`), and
//! the test checks that it does.

mod common;

use agentkit_core::{Part, ToolOutput};
use agentkit_mcp::{McpServerConfig, McpServerManager, StreamRetry};
use agentkit_tools_core::{ToolContext, ToolError, ToolRequest};
use common::{fixtures_dir, tool, within};
use serde_json::json;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The reference server's HTTP mode on a free loopback port; killed on drop.
struct ReferenceHttpServer {
    port: u16,
    child: tokio::process::Child,
}

impl ReferenceHttpServer {
    async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let entry = fixtures_dir()
            .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        let child = tokio::process::Command::new("node")
            .arg("--require")
            .arg(fixtures_dir().join("loopback.cjs"))
            .arg(entry)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .current_dir(fixtures_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("node starts");
        within(20, "the reference server listening", async {
            while tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_err()
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        Self { port, child }
    }

    /// Kills the server with SIGKILL: no goodbye on any stream.
    async fn kill(&mut self) {
        self.child.kill().await.expect("the server is killed");
    }
}

/// The local addresses listening on `port`, from /proc/net/tcp and tcp6.
fn listening_addresses(port: u16) -> Vec<String> {
    let port = format!("{port:04X}");
    let mut found = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state)) = (fields.get(1), fields.get(3)) else {
                continue;
            };
            if let Some((address, local_port)) = local.split_once(':')
                && local_port == port
                && *state == "0A"
            {
                found.push(address.to_owned());
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_server_over_streamable_http() {
    within(60, "the reference HTTP test", async {
        let server = ReferenceHttpServer::start().await;
        // Linux tells through /proc; elsewhere the preload is trusted.
        if std::path::Path::new("/proc/net/tcp").exists() {
            let listening = listening_addresses(server.port);
            assert!(!listening.is_empty(), "found no listener");
            assert!(
                listening.iter().all(|a| a == "0100007F"),
                "the server must listen on 127.0.0.1 only, found {listening:?}"
            );
        }

        let manager = McpServerManager::new();
        manager
            .register(McpServerConfig::http(
                "everything",
                format!("http://127.0.0.1:{}/mcp", server.port),
            ))
            .unwrap();
        let status = manager.connect("everything").await.expect("connects");
        assert_eq!(
            status.server_name.as_deref(),
            Some("mcp-servers/everything")
        );
        assert_eq!(status.pid, None);

        let source = manager.source();
        let echo = tool(&source, "mcp_everything_echo");
        let result = echo
            .invoke(
                ToolRequest::new(
                    "call-1",
                    "mcp_everything_echo",
                    json!({ "message": "over http" }),
                ),
                ToolContext::detached(),
            )
            .await
            .expect("echo answers");
        assert_eq!(result.output, ToolOutput::Text("Echo: over http".into()));

        let image = manager
            .call_tool(
                "everything",
                "get-tiny-image",
                json!({}),
                ToolContext::detached(),
            )
            .await
            .expect("the image tool answers");
        let ToolOutput::Parts(parts) = image.output else {
            panic!("parts expected")
        };
        assert!(
            parts
                .iter()
                .any(|p| matches!(p, Part::Media(m) if m.mime_type == "image/png"))
        );

        manager.disconnect("everything").await.unwrap();
        assert!(manager.snapshot().tools.is_empty());
    })
    .await;
}

/// Starts the reference server, calls its long-running tool, kills the
/// server with SIGKILL mid-call, and returns how long the call took to fail
/// after that, checking that it failed as unavailable in plain words.
async fn killed_mid_call(retry: Option<StreamRetry>) -> Duration {
    let mut server = ReferenceHttpServer::start().await;
    let manager = McpServerManager::new();
    let mut config = McpServerConfig::http(
        "everything",
        format!("http://127.0.0.1:{}/mcp", server.port),
    )
    .call_timeout(Duration::from_secs(60));
    if let Some(retry) = retry {
        config = config.stream_retry(retry);
    }
    manager.register(config).unwrap();
    manager.connect("everything").await.expect("connects");
    let call = tokio::spawn({
        let manager = manager.clone();
        async move {
            manager
                .call_tool(
                    "everything",
                    "trigger-long-running-operation",
                    json!({ "duration": 50, "steps": 50 }),
                    ToolContext::new("long-1"),
                )
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    server.kill().await;
    let killed_at = Instant::now();
    let outcome = within(30, "the call failing", call).await.unwrap();
    let took = killed_at.elapsed();
    eprintln!("{retry:?}: the call failed {took:?} after the server died: {outcome:?}");
    let Err(ToolError::Unavailable(message)) = &outcome else {
        panic!("unavailable expected, got {outcome:?}")
    };
    assert!(!message.contains("::"), "no library type names: {message}");
    took
}

/// A server killed while a call waits on its response stream: the call
/// fails as unavailable after the bounded stream-resume attempts (about
/// 0.75 s of waiting by default), not at its 60 s deadline, and not never
/// (rmcp's own default retries forever).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_call_fails_the_call_fast() {
    within(90, "the dead HTTP server test", async {
        let took = killed_mid_call(None).await;
        assert!(took < Duration::from_secs(10), "took {took:?}");
    })
    .await;
}

/// The resume policy is the configured one: three attempts, two seconds
/// apart, cannot give up sooner than four seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_retry_policy_is_configurable() {
    within(90, "the configured retry test", async {
        let two_seconds = Duration::from_secs(2);
        let took = killed_mid_call(Some(StreamRetry::new(3, two_seconds, two_seconds))).await;
        assert!(took >= Duration::from_millis(3900), "took {took:?}");
        assert!(took < Duration::from_secs(20), "took {took:?}");
    })
    .await;
}
