//! Against the MCP reference server (`@modelcontextprotocol/server-everything`
//! from npm) over stdio: discovery, calls, images, structured content,
//! list_changed, deadlines, cancellation, crashes and process cleanup.

mod common;

use agentkit_core::{CancellationController, DataRef, Modality, Part, ToolOutput};
use agentkit_mcp::{McpError, McpServerManager};
use agentkit_tools_core::{
    McpOperation, PermissionPayload, ToolContext, ToolError, ToolRequest, ToolSource,
};
use common::{eventually, everything, process_alive, tool, within};
use serde_json::json;
use std::time::Duration;

fn request(name: &str, input: serde_json::Value) -> ToolRequest {
    ToolRequest::new("call-1", name, input)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connects_discovers_and_calls_echo() {
    within(60, "the echo test", async {
        let manager = McpServerManager::new();
        manager.register(everything("everything")).unwrap();
        let status = manager.connect("everything").await.expect("connects");
        assert!(status.connected);
        assert_eq!(
            status.server_name.as_deref(),
            Some("mcp-servers/everything")
        );
        assert!(status.protocol_version.is_some());
        assert!(status.pid.is_some());
        assert!(
            status.tools.iter().any(|t| t == "echo"),
            "{:?}",
            status.tools
        );

        let source = manager.source();
        let snapshot = source.snapshot();
        assert!(snapshot.revision >= 1);
        for name in snapshot.names() {
            assert!(name.starts_with("mcp_everything_"), "{name}");
            agentkit_tools_core::validate_tool_name(&name).unwrap();
        }
        assert!(!manager.resources("everything").unwrap().is_empty());
        assert!(!manager.prompts("everything").unwrap().is_empty());

        let echo = tool(&source, "mcp_everything_echo");
        let spec = echo.spec();
        assert_eq!(spec.input_schema["properties"]["message"]["type"], "string");
        let proposed = echo.proposed_requests(&json!({ "message": "hi" })).unwrap();
        assert_eq!(proposed.len(), 1);
        assert_eq!(proposed[0].kind, "mcp.invoke_tool");
        assert_eq!(
            proposed[0].payload,
            PermissionPayload::Mcp(McpOperation::InvokeTool {
                server: "everything".into(),
                tool: "echo".into()
            })
        );

        let result = echo
            .invoke(
                request("mcp_everything_echo", json!({ "message": "hello" })),
                ToolContext::detached(),
            )
            .await
            .expect("echo answers");
        assert!(!result.is_error);
        assert_eq!(result.output, ToolOutput::Text("Echo: hello".into()));
        assert_eq!(result.metadata["mcp.server"], "everything");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_and_structured_content_map_to_parts() {
    within(60, "the image test", async {
        let manager = McpServerManager::new();
        manager.register(everything("everything")).unwrap();
        manager.connect("everything").await.expect("connects");
        let source = manager.source();

        let image = tool(&source, "mcp_everything_get-tiny-image")
            .invoke(
                request("mcp_everything_get-tiny-image", json!({})),
                ToolContext::detached(),
            )
            .await
            .expect("image tool answers");
        let ToolOutput::Parts(parts) = &image.output else {
            panic!("parts expected, got {:?}", image.output)
        };
        let media = parts
            .iter()
            .find_map(|part| match part {
                Part::Media(media) => Some(media),
                _ => None,
            })
            .expect("an image part");
        assert_eq!(media.modality, Modality::Image);
        assert_eq!(media.mime_type, "image/png");
        let DataRef::Bytes { data } = &media.data else {
            panic!("inline bytes expected")
        };
        assert_eq!(&data[..8], b"\x89PNG\r\n\x1a\n", "decoded PNG bytes");
        assert!(parts.iter().any(|p| p.as_text().is_some()));

        let weather = manager
            .call_tool(
                "everything",
                "get-structured-content",
                json!({ "location": "Chicago" }),
                ToolContext::detached(),
            )
            .await
            .expect("structured tool answers");
        // The server sends the value twice (as JSON text for old clients,
        // and as structuredContent); the model gets it once.
        let ToolOutput::Structured(structured) = &weather.output else {
            panic!(
                "only the structured value expected, got {:?}",
                weather.output
            )
        };
        assert!(structured["temperature"].is_number(), "{structured}");
        assert_eq!(weather.metadata["mcp.deduplicated_text"], 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_from_the_server_reach_the_model() {
    within(60, "the error test", async {
        let manager = McpServerManager::new();
        manager.register(everything("everything")).unwrap();
        manager.connect("everything").await.expect("connects");
        // Invalid arguments: the server reports a failure (as an isError
        // result or a JSON-RPC error); either way the call fails visibly.
        let outcome = manager
            .call_tool(
                "everything",
                "get-sum",
                json!({ "a": "not a number" }),
                ToolContext::detached(),
            )
            .await;
        match outcome {
            Ok(result) => assert!(result.is_error, "{result:?}"),
            Err(err) => assert!(matches!(err, ToolError::ExecutionFailed(_)), "{err:?}"),
        }
        let sum = manager
            .call_tool(
                "everything",
                "get-sum",
                json!({ "a": 2, "b": 3 }),
                ToolContext::detached(),
            )
            .await
            .expect("get-sum answers");
        assert!(sum.output.to_text().contains('5'), "{:?}", sum.output);
        let not_object = manager
            .call_tool("everything", "echo", json!([1, 2]), ToolContext::detached())
            .await;
        assert!(matches!(not_object, Err(ToolError::InvalidInput(_))));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_registered_after_the_handshake_reach_the_catalog() {
    within(60, "the late tools test", async {
        let manager = McpServerManager::new();
        let mut events = manager.subscribe();
        manager.register(everything("everything")).unwrap();
        manager.connect("everything").await.expect("connects");
        // The reference server registers some tools only once the client
        // said `initialized`, and announces them with tools/list_changed.
        // Here discovery usually sees them already (the refresh then
        // changes nothing); tests/http_auth.rs checks list_changed adding
        // and removing tools for real.
        let source = manager.source();
        eventually(20, "the late tools", || {
            source
                .snapshot()
                .names()
                .iter()
                .any(|n| n == "mcp_everything_simulate-research-query")
        })
        .await;
        let first = within(5, "a catalog event", events.recv())
            .await
            .expect("an event");
        assert_eq!(first.source, "mcp");
        assert!(first.added.iter().any(|n| n == "mcp_everything_echo"));
        assert!(source.snapshot().revision >= 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_deadline_times_out_and_the_session_survives() {
    within(60, "the deadline test", async {
        let manager = McpServerManager::new();
        manager
            .register(everything("everything").call_timeout(Duration::from_millis(500)))
            .unwrap();
        manager.connect("everything").await.expect("connects");
        let started = std::time::Instant::now();
        let outcome = manager
            .call_tool(
                "everything",
                "trigger-long-running-operation",
                json!({ "duration": 30, "steps": 3 }),
                ToolContext::detached(),
            )
            .await;
        assert_eq!(outcome, Err(ToolError::Timeout(Duration::from_millis(500))));
        assert!(started.elapsed() < Duration::from_secs(10));
        // Cancelling one call leaves the session usable.
        let echo = manager
            .call_tool(
                "everything",
                "echo",
                json!({ "message": "still here" }),
                ToolContext::detached(),
            )
            .await
            .expect("echo after a timeout");
        assert_eq!(echo.output.to_text(), "Echo: still here");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_turn_cancels_the_call() {
    within(60, "the cancellation test", async {
        let manager = McpServerManager::new();
        manager.register(everything("everything")).unwrap();
        manager.connect("everything").await.expect("connects");
        let controller = CancellationController::new();
        let mut ctx = ToolContext::detached();
        ctx.cancellation = controller.handle().checkpoint();
        let interrupter = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            controller.interrupt();
        });
        let outcome = manager
            .call_tool(
                "everything",
                "trigger-long-running-operation",
                json!({ "duration": 30, "steps": 3 }),
                ctx,
            )
            .await;
        interrupter.await.unwrap();
        assert_eq!(outcome, Err(ToolError::Cancelled));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_server_is_reconnected_on_the_next_call() {
    within(90, "the crash test", async {
        let manager = McpServerManager::new();
        manager.register(everything("everything")).unwrap();
        let first = manager.connect("everything").await.expect("connects");
        let pid = first.pid.expect("a stdio server has a pid");
        let revision = manager.snapshot().revision;

        let killed = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        eventually(10, "the manager noticing the crash", || {
            !manager.status("everything").unwrap().connected
        })
        .await;
        // The tools stay listed while the server is down.
        assert!(manager.snapshot().revision >= revision);
        let echo = tool(&manager.source(), "mcp_everything_echo");

        let result = echo
            .invoke(
                request("mcp_everything_echo", json!({ "message": "again" })),
                ToolContext::detached(),
            )
            .await
            .expect("the next call reconnects");
        assert_eq!(result.output.to_text(), "Echo: again");
        let second = manager.status("everything").unwrap();
        assert!(second.connected);
        assert_ne!(second.pid, Some(pid), "a new process");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnect_and_drop_end_the_process() {
    within(60, "the cleanup test", async {
        let manager = McpServerManager::new();
        manager.register(everything("everything")).unwrap();
        let pid = manager.connect("everything").await.unwrap().pid.unwrap();
        assert!(process_alive(pid));
        assert!(!manager.snapshot().tools.is_empty());
        manager.disconnect("everything").await.unwrap();
        eventually(10, "the process ending after disconnect", || {
            !process_alive(pid)
        })
        .await;
        assert!(manager.snapshot().tools.is_empty(), "its tools are gone");

        let pid = manager.connect("everything").await.unwrap().pid.unwrap();
        assert!(process_alive(pid));
        drop(manager);
        eventually(10, "the process ending after drop", || !process_alive(pid)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_failing_server_does_not_fail_the_others() {
    within(60, "the connect_all test", async {
        let manager = McpServerManager::new();
        manager.register(everything("good")).unwrap();
        manager
            .register(agentkit_mcp::McpServerConfig::stdio(
                "missing",
                "/nonexistent/agentkit-mcp-test-server",
            ))
            .unwrap();
        let results = manager.connect_all().await;
        assert_eq!(results.len(), 2);
        assert!(results[0].1.is_ok(), "{:?}", results[0]);
        assert!(
            matches!(results[1].1, Err(McpError::Spawn { .. })),
            "{:?}",
            results[1]
        );
        assert!(
            manager
                .snapshot()
                .names()
                .iter()
                .any(|n| n == "mcp_good_echo")
        );
        assert_eq!(
            manager.register(everything("good")),
            Err(McpError::AlreadyRegistered("good".into()))
        );
    })
    .await;
}

/// Refuses `mcp.invoke_tool` for one server tool, allows everything else.
struct DenyTool(&'static str);

impl agentkit_tools_core::PermissionChecker for DenyTool {
    fn evaluate(
        &self,
        request: &agentkit_tools_core::PermissionRequest,
    ) -> agentkit_tools_core::PermissionDecision {
        match &request.payload {
            PermissionPayload::Mcp(McpOperation::InvokeTool { tool, .. }) if tool == self.0 => {
                agentkit_tools_core::PermissionDecision::Deny(
                    agentkit_tools_core::PermissionDenial {
                        request_kind: request.kind.clone(),
                        message: format!("{tool} is not allowed"),
                    },
                )
            }
            _ => agentkit_tools_core::PermissionDecision::Allow,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_executor_checks_permissions_of_mcp_tools_like_any_other() {
    use agentkit_tools_core::{BasicToolExecutor, Preflight, ToolExecutor, ToolFederation};
    within(60, "the executor test", async {
        let manager = McpServerManager::new();
        manager.register(everything("everything")).unwrap();
        manager.connect("everything").await.unwrap();
        let executor = BasicToolExecutor::new(ToolFederation::new().with_source(manager.source()))
            .with_permissions(std::sync::Arc::new(DenyTool("get-env")));
        assert!(
            executor
                .specs()
                .iter()
                .any(|spec| spec.name == "mcp_everything_echo")
        );

        let denied = request("mcp_everything_get-env", json!({}));
        assert!(matches!(
            executor.preflight(&denied),
            Preflight::Rejected(ToolError::PermissionDenied(ref m)) if m == "get-env is not allowed"
        ));
        let allowed = request("mcp_everything_echo", json!({ "message": "via executor" }));
        assert_eq!(executor.preflight(&allowed), Preflight::Ready);
        let result = executor
            .execute(allowed, ToolContext::detached())
            .await
            .unwrap();
        assert_eq!(result.output.to_text(), "Echo: via executor");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_are_read_and_prompts_fetched() {
    within(60, "the resources and prompts test", async {
        let manager = McpServerManager::new();
        manager.register(everything("everything")).unwrap();
        manager.connect("everything").await.unwrap();

        let resources = manager.resources("everything").unwrap();
        let first = resources.first().expect("the server lists resources");
        let parts = manager
            .read_resource("everything", &first.uri)
            .await
            .unwrap();
        let Some(Part::File(file)) = parts.first() else {
            panic!("a file part expected, got {parts:?}")
        };
        assert_eq!(file.name.as_deref(), Some(first.uri.as_str()));

        let prompts = manager.prompts("everything").unwrap();
        let args_prompt = prompts
            .iter()
            .find(|p| p.name == "args-prompt")
            .expect("args-prompt is listed");
        assert!(
            args_prompt
                .arguments
                .iter()
                .any(|a| a.name == "city" && a.required)
        );
        let items = manager
            .get_prompt(
                "everything",
                "args-prompt",
                [("city".to_owned(), "Lisbon".to_owned())].into(),
            )
            .await
            .unwrap();
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].kind, agentkit_core::ItemKind::User);
        assert!(items[0].text_content().contains("Lisbon"), "{items:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_each_get_their_own_answer() {
    within(60, "the concurrency test", async {
        let manager = McpServerManager::new();
        manager.register(everything("everything")).unwrap();
        // Not connected yet: the first calls race to connect, and share one.
        let calls = (0..8).map(|i| {
            let manager = manager.clone();
            tokio::spawn(async move {
                manager
                    .call_tool(
                        "everything",
                        "echo",
                        json!({ "message": format!("call {i}") }),
                        ToolContext::detached(),
                    )
                    .await
            })
        });
        let results = futures::future::join_all(calls).await;
        for (i, result) in results.into_iter().enumerate() {
            let result = result.unwrap().expect("every call answers");
            assert_eq!(result.output.to_text(), format!("Echo: call {i}"));
        }
        assert!(manager.status("everything").unwrap().connected);
    })
    .await;
}
