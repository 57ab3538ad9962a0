//! Against the MCP reference server over stdio: its
//! `trigger-sampling-request` tool sends `sampling/createMessage` back to
//! the client mid-call. With a host handler the handler sees the request
//! and its answer reaches the server; a refusal reaches it as the spec's
//! "user rejected" error; without a handler sampling is not announced at
//! all (the server then does not even offer the tool).

mod common;

use agentkit_mcp::{
    McpServerManager, SamplingError, SamplingHandler, SamplingRequest, SamplingResponse,
};
use agentkit_tools_core::ToolContext;
use common::{everything, within};
use serde_json::json;
use std::sync::{Arc, Mutex};

/// Answers (or refuses) every request, keeping what it was asked.
struct Host {
    refuse: bool,
    seen: Mutex<Vec<SamplingRequest>>,
}

#[async_trait::async_trait]
impl SamplingHandler for Host {
    async fn create_message(
        &self,
        request: SamplingRequest,
    ) -> Result<SamplingResponse, SamplingError> {
        self.seen.lock().unwrap().push(request);
        if self.refuse {
            Err(SamplingError::Refused(Some("the user said no".into())))
        } else {
            Ok(SamplingResponse::text("host-model-1", "forty-two"))
        }
    }
}

fn host(refuse: bool) -> Arc<Host> {
    Arc::new(Host {
        refuse,
        seen: Mutex::new(Vec::new()),
    })
}

async fn trigger(manager: &McpServerManager) -> agentkit_tools_core::ToolResult {
    manager
        .call_tool(
            "everything",
            "trigger-sampling-request",
            json!({ "prompt": "six times seven?", "maxTokens": 64 }),
            ToolContext::detached(),
        )
        .await
        .expect("the tool answers")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_request_is_answered_by_the_host_model() {
    within(60, "the sampling test", async {
        let manager = McpServerManager::new();
        let handler = host(false);
        manager.set_sampling_handler(handler.clone());
        manager.register(everything("everything")).unwrap();

        let result = trigger(&manager).await;
        assert!(!result.is_error, "{:?}", result.output);
        let text = result.output.to_text();
        assert!(text.contains("forty-two"), "{text}");
        assert!(text.contains("host-model-1"), "{text}");

        let seen = handler.seen.lock().unwrap();
        let [request] = &seen[..] else {
            panic!("one request expected, got {seen:?}")
        };
        assert_eq!(request.server, "everything");
        assert_eq!(request.max_tokens, 64);
        assert_eq!(
            request.system_prompt.as_deref(),
            Some("You are a helpful test server.")
        );
        assert!(
            request.messages[0]
                .text_content()
                .contains("six times seven?"),
            "{:?}",
            request.messages
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_reaches_the_server_as_user_rejected() {
    within(60, "the sampling refusal test", async {
        let manager = McpServerManager::new();
        let handler = host(true);
        manager.set_sampling_handler(handler.clone());
        manager.register(everything("everything")).unwrap();

        let result = trigger(&manager).await;
        // The server's tool failed on our error and says so.
        assert!(result.is_error, "{:?}", result.output);
        let text = result.output.to_text();
        assert!(text.contains("User rejected sampling request"), "{text}");
        assert!(text.contains("the user said no"), "{text}");
        assert_eq!(handler.seen.lock().unwrap().len(), 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_handler_sampling_is_not_offered() {
    within(60, "the no-sampling test", async {
        let manager = McpServerManager::new();
        manager.register(everything("everything")).unwrap();
        let status = manager.connect("everything").await.unwrap();
        assert!(status.tools.iter().any(|t| t == "echo"));
        // The server registers its sampling tool only for clients that
        // announce sampling.
        assert!(
            !status.tools.iter().any(|t| t == "trigger-sampling-request"),
            "{:?}",
            status.tools
        );
    })
    .await;
}
