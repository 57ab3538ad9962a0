//! Against an rmcp server over streamable HTTP on 127.0.0.1, protected by a
//! bearer token: out-of-band auth, list_changed, deadlines and cancellation.

mod common;

use agentkit_core::CancellationController;
use agentkit_mcp::{
    AuthOperation, AuthRequest, AuthResolution, McpAuthResponder, McpCredentials, McpError,
    McpServerConfig, McpServerManager, ServerState,
};
use agentkit_tools_core::{ToolContext, ToolError, ToolRequest, ToolSource};
use common::rmcp_server::{HttpServer, READ_ONLY_TOKEN, SCOPE_CHALLENGE, challenge, whoami};
use common::{eventually, tool, within};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const TOKEN: &str = "right-token";

fn auth_request(err: McpError) -> AuthRequest {
    match err {
        McpError::AuthRequired(request) => *request,
        other => panic!("AuthRequired expected, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_is_requested_resolved_and_requested_again_for_a_wrong_token() {
    within(60, "the auth flow", async {
        let server = HttpServer::start(TOKEN).await;
        let manager = server.manager();

        // No token: the server's challenge comes back as an auth request.
        let request = auth_request(manager.connect("secure").await.unwrap_err());
        assert_eq!(request.provider, "secure");
        assert_eq!(request.operation, AuthOperation::Connect);
        assert_eq!(
            request.challenge.as_deref(),
            Some(challenge(server.port).as_str())
        );
        assert_eq!(request.scopes, ["tools:call"]);
        assert_eq!(request.metadata["mcp.error"], "invalid_token");
        assert!(
            request.metadata["mcp.resource_metadata"]
                .as_str()
                .unwrap()
                .contains("oauth-protected-resource")
        );
        assert_eq!(manager.pending_auth(), std::slice::from_ref(&request));
        assert!(manager.snapshot().tools.is_empty());

        // A wrong token: resolving connects at once, and the server asks
        // again, with a new request.
        let again = auth_request(
            manager
                .resolve_auth(AuthResolution::provided(
                    request.clone(),
                    McpCredentials::bearer("wrong"),
                ))
                .await
                .unwrap_err(),
        );
        assert_ne!(again.id, request.id);
        assert_eq!(again.challenge, request.challenge);
        assert_eq!(
            manager.status("secure").unwrap().state,
            ServerState::NeedsAuth(Box::new(again.clone()))
        );
        let again_on_connect = auth_request(manager.connect("secure").await.unwrap_err());
        assert_eq!(again_on_connect.challenge, request.challenge);

        // Resolving an answered request is an error.
        assert_eq!(
            manager
                .resolve_auth(AuthResolution::provided(
                    request.clone(),
                    McpCredentials::bearer(TOKEN)
                ))
                .await,
            Err(McpError::UnknownAuthRequest(request.id.clone()))
        );

        // The right token: connect, list, call.
        manager
            .resolve_auth(AuthResolution::provided(
                again_on_connect,
                McpCredentials::bearer(TOKEN),
            ))
            .await
            .unwrap();
        assert!(manager.pending_auth().is_empty());
        let status = manager
            .connect("secure")
            .await
            .expect("connects with the token");
        assert!(status.connected);
        let whoami = tool(&manager.source(), "mcp_secure_whoami");
        let result = whoami
            .invoke(
                ToolRequest::new("call-1", "mcp_secure_whoami", json!({})),
                ToolContext::detached(),
            )
            .await
            .expect("the call succeeds");
        assert_eq!(result.output.to_text(), "authorized");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_fails_the_call_with_auth_required_and_the_next_call_reconnects() {
    within(60, "the revoked token flow", async {
        let server = HttpServer::start(TOKEN).await;
        let manager = server.manager();
        manager
            .set_credentials("secure", McpCredentials::bearer(TOKEN))
            .await
            .unwrap();
        manager.connect("secure").await.expect("connects");
        let whoami = tool(&manager.source(), "mcp_secure_whoami");
        let call = || {
            whoami.invoke(
                ToolRequest::new("call-7", "mcp_secure_whoami", json!({})),
                ToolContext::detached(),
            )
        };
        assert_eq!(call().await.unwrap().output.to_text(), "authorized");

        server.shared.set_token("rotated-token");
        let err = call().await.unwrap_err();
        let ToolError::AuthRequired(request) = err else {
            panic!("AuthRequired expected, got {err:?}")
        };
        assert_eq!(request.provider, "secure");
        assert_eq!(
            request.operation,
            AuthOperation::InvokeTool {
                tool: "whoami".into(),
                call_id: Some("call-7".into())
            }
        );
        assert!(request.challenge.is_some());

        manager
            .resolve_auth(AuthResolution::provided(
                *request,
                McpCredentials::bearer("rotated-token"),
            ))
            .await
            .unwrap();
        assert_eq!(call().await.unwrap().output.to_text(), "authorized");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_request_makes_the_server_unavailable_until_credentials_arrive() {
    within(60, "the refusal flow", async {
        let server = HttpServer::start(TOKEN).await;
        let manager = server.manager();
        let request = auth_request(manager.connect("secure").await.unwrap_err());
        manager
            .resolve_auth(AuthResolution::refused(request, Some("not today".into())))
            .await
            .unwrap();
        assert_eq!(
            manager.connect("secure").await.unwrap_err(),
            McpError::AuthRefused {
                server: "secure".into(),
                reason: Some("not today".into())
            }
        );
        let call = manager
            .call_tool("secure", "whoami", json!({}), ToolContext::detached())
            .await;
        assert!(
            matches!(call, Err(ToolError::Unavailable(ref m)) if m.contains("not today")),
            "{call:?}"
        );

        manager
            .set_credentials("secure", McpCredentials::bearer(TOKEN))
            .await
            .unwrap();
        manager.connect("secure").await.expect("connects after all");
    })
    .await;
}

struct SecretStore {
    asked: AtomicUsize,
}

#[async_trait::async_trait]
impl McpAuthResponder for SecretStore {
    async fn respond(&self, request: &AuthRequest) -> Option<AuthResolution> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        Some(AuthResolution::provided(
            request.clone(),
            McpCredentials::bearer(TOKEN),
        ))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_responder_answers_without_the_host() {
    within(60, "the responder flow", async {
        let server = HttpServer::start(TOKEN).await;
        let manager = server.manager();
        let store = Arc::new(SecretStore {
            asked: AtomicUsize::new(0),
        });
        manager.set_auth_responder(store.clone());
        manager
            .connect("secure")
            .await
            .expect("the responder provided the token");
        assert_eq!(store.asked.load(Ordering::SeqCst), 1);
        assert!(manager.pending_auth().is_empty());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_bearer_token_is_sent() {
    within(60, "the configured token", async {
        let server = HttpServer::start(TOKEN).await;
        let manager = McpServerManager::new();
        manager
            .register(McpServerConfig::http("secure", &server.url).bearer_token(TOKEN))
            .unwrap();
        let status = manager.connect("secure").await.expect("connects");
        // Four tools, listed in pages of three: both pages were read.
        assert_eq!(
            status.tools,
            ["whoami", "hang", "add_tool", "remove_tool"],
            "all pages of tools/list"
        );
        assert_eq!(manager.snapshot().tools.len(), 4);

        // Removing forgets the server and its tools; the name is free again.
        manager.remove("secure").await.unwrap();
        assert!(manager.snapshot().tools.is_empty());
        assert_eq!(
            manager.status("secure").unwrap_err(),
            McpError::UnknownServer("secure".into())
        );
        manager
            .register(McpServerConfig::http("secure", &server.url).bearer_token(TOKEN))
            .unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_adds_and_removes_tools() {
    within(60, "the list_changed flow", async {
        let server = HttpServer::start(TOKEN).await;
        let manager = server.manager();
        manager
            .set_credentials("secure", McpCredentials::bearer(TOKEN))
            .await
            .unwrap();
        manager.connect("secure").await.unwrap();
        let source = manager.source();
        let before = source.snapshot().revision;
        let mut events = manager.subscribe();

        manager
            .call_tool(
                "secure",
                "add_tool",
                json!({ "name": "late.tool" }),
                ToolContext::detached(),
            )
            .await
            .unwrap();
        let added = within(10, "the added event", events.recv()).await.unwrap();
        assert_eq!(added.added, ["mcp_secure_late_tool"]);
        assert!(added.removed.is_empty());
        assert_eq!(source.snapshot().revision, before + 1);
        let late = tool(&source, "mcp_secure_late_tool");
        assert_eq!(late.spec().metadata["mcp.tool"], "late.tool");
        let result = late
            .invoke(
                ToolRequest::new("c", "mcp_secure_late_tool", json!({})),
                ToolContext::detached(),
            )
            .await
            .unwrap();
        assert_eq!(result.output.to_text(), "extra late.tool");

        manager
            .call_tool(
                "secure",
                "remove_tool",
                json!({ "name": "late.tool" }),
                ToolContext::detached(),
            )
            .await
            .unwrap();
        let removed = within(10, "the removed event", events.recv())
            .await
            .unwrap();
        assert_eq!(removed.removed, ["mcp_secure_late_tool"]);
        assert_eq!(source.snapshot().revision, before + 2);
        assert!(
            !source
                .snapshot()
                .names()
                .iter()
                .any(|n| n == "mcp_secure_late_tool")
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadlines_and_turn_cancellation_cancel_the_call_on_the_server() {
    within(60, "the cancellation flow", async {
        let server = HttpServer::start(TOKEN).await;
        let manager = McpServerManager::new();
        manager
            .register(
                McpServerConfig::http("secure", &server.url)
                    .bearer_token(TOKEN)
                    .call_timeout(Duration::from_millis(300)),
            )
            .unwrap();
        manager.connect("secure").await.unwrap();

        let outcome = manager
            .call_tool("secure", "hang", json!({}), ToolContext::detached())
            .await;
        assert_eq!(outcome, Err(ToolError::Timeout(Duration::from_millis(300))));
        eventually(10, "the server seeing the deadline's cancellation", || {
            server.shared.cancellations() == 1
        })
        .await;

        // The turn is interrupted while the call runs.
        let controller = CancellationController::new();
        let turn = controller.handle().checkpoint();
        let ctx = ToolContext::new("hang-2").with_cancellation(turn.clone());
        let interrupter = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            controller.interrupt();
            controller
        });
        let outcome = manager.call_tool("secure", "hang", json!({}), ctx).await;
        assert_eq!(outcome, Err(ToolError::Cancelled));
        eventually(10, "the server seeing the turn's cancellation", || {
            server.shared.cancellations() == 2
        })
        .await;

        // Already cancelled: refused before anything is sent.
        let _controller = interrupter.await.unwrap();
        let ctx = ToolContext::new("hang-3").with_cancellation(turn);
        let outcome = manager.call_tool("secure", "hang", json!({}), ctx).await;
        assert_eq!(outcome, Err(ToolError::Cancelled));
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(server.shared.cancellations(), 2);

        // The caller drops the call's future (its own timeout): the server
        // hears of it over HTTP too.
        let dropped = tokio::time::timeout(
            Duration::from_millis(150),
            manager.call_tool("secure", "hang", json!({}), ToolContext::new("hang-4")),
        )
        .await;
        assert!(dropped.is_err());
        eventually(
            10,
            "the server seeing the dropped call's cancellation",
            || server.shared.cancellations() == 3,
        )
        .await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insufficient_scope_is_an_auth_request_with_the_scopes() {
    within(60, "the 403 flow", async {
        let server = HttpServer::start(TOKEN).await;
        let manager = server.manager();
        manager
            .set_credentials("secure", McpCredentials::bearer(READ_ONLY_TOKEN))
            .await
            .unwrap();
        let request = auth_request(manager.connect("secure").await.unwrap_err());
        assert_eq!(request.challenge.as_deref(), Some(SCOPE_CHALLENGE));
        assert_eq!(request.scopes, ["tools:call", "admin"]);
        assert_eq!(request.metadata["mcp.http_status"], 403);
        assert_eq!(request.metadata["mcp.error"], "insufficient_scope");
        assert_eq!(request.metadata["mcp.error_description"], "needs admin");

        manager
            .resolve_auth(AuthResolution::provided(
                request,
                McpCredentials::bearer(TOKEN),
            ))
            .await
            .unwrap();
        manager
            .connect("secure")
            .await
            .expect("connects with the wider token");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_without_a_challenge_still_asks_for_credentials() {
    within(60, "the bare 401 flow", async {
        let server = HttpServer::start(TOKEN).await;
        server
            .shared
            .omit_challenge
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let manager = server.manager();
        let request = auth_request(manager.connect("secure").await.unwrap_err());
        assert_eq!(request.provider, "secure");
        assert_eq!(request.challenge, None);
        assert!(request.scopes.is_empty());
        assert_eq!(request.metadata["mcp.http_status"], 401);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_endpoint_is_a_connect_error_not_an_auth_request() {
    within(30, "the unreachable endpoint", async {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let manager = McpServerManager::new();
        manager
            .register(
                McpServerConfig::http("gone", format!("http://127.0.0.1:{port}/mcp"))
                    .connect_timeout(Duration::from_secs(5)),
            )
            .unwrap();
        let err = manager.connect("gone").await.unwrap_err();
        assert!(
            matches!(err, McpError::Connect { ref server, .. } if server == "gone"),
            "{err:?}"
        );
        assert!(manager.pending_auth().is_empty());
        let call = manager
            .call_tool("gone", "anything", json!({}), ToolContext::detached())
            .await;
        assert!(matches!(call, Err(ToolError::Unavailable(_))), "{call:?}");
    })
    .await;
}

/// A server that wants credentials from the very first connect: it stays
/// registered, the host sees it waiting (state and request, with the
/// server's challenge), and `resolve_auth` connects it, so its tools join
/// the catalog with a new revision and a catalog event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_needing_auth_from_the_start_joins_the_catalog_after_resolve_auth() {
    within(60, "the connect-time auth flow", async {
        let server = HttpServer::start(TOKEN).await;
        let manager = server.manager();
        assert_eq!(
            manager.status("secure").unwrap().state,
            ServerState::Disconnected
        );
        let mut events = manager.subscribe();

        let outcomes = manager.connect_all().await;
        let request = auth_request(outcomes[0].1.clone().unwrap_err());
        let status = manager.status("secure").unwrap();
        assert_eq!(
            status.state,
            ServerState::NeedsAuth(Box::new(request.clone()))
        );
        assert!(!status.connected);
        assert_eq!(
            request.challenge.as_deref(),
            Some(challenge(server.port).as_str())
        );
        assert_eq!(manager.servers(), ["secure"], "still registered");
        assert!(manager.snapshot().tools.is_empty());
        let revision = manager.snapshot().revision;

        manager
            .resolve_auth(AuthResolution::provided(
                request,
                McpCredentials::bearer(TOKEN),
            ))
            .await
            .expect("resolving connects");
        let status = manager.status("secure").unwrap();
        assert_eq!(status.state, ServerState::Connected);
        assert!(manager.pending_auth().is_empty());
        let snapshot = manager.snapshot();
        assert!(snapshot.revision > revision);
        assert!(snapshot.names().contains(&"mcp_secure_whoami".to_owned()));
        let event = within(5, "the catalog event", events.recv())
            .await
            .expect("an event");
        assert!(
            event.added.contains(&"mcp_secure_whoami".to_owned()),
            "{event:?}"
        );
    })
    .await;
}

/// A credentials provider that hands out whatever token it holds now, and
/// counts how often it was asked.
struct TokenProvider {
    token: std::sync::Mutex<String>,
    asked: AtomicUsize,
}

impl TokenProvider {
    fn new(token: &str) -> Arc<Self> {
        Arc::new(Self {
            token: std::sync::Mutex::new(token.to_owned()),
            asked: AtomicUsize::new(0),
        })
    }

    fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl McpAuthResponder for TokenProvider {
    async fn respond(&self, request: &AuthRequest) -> Option<AuthResolution> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let token = self.token.lock().unwrap().clone();
        Some(AuthResolution::provided(
            request.clone(),
            McpCredentials::bearer(token),
        ))
    }
}

/// A per-server provider is asked on the first 401, and again (once) when a
/// call meets a 401 or 403 later: a refreshed token is picked up with no
/// error reaching the caller; a token that still fails surfaces as
/// `AuthRequired`. The manager-wide responder is not asked for a server
/// with its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credentials_provider_is_asked_again_once_on_401_and_403() {
    within(60, "the credentials provider flow", async {
        let server = HttpServer::start("token-1").await;
        let manager = server.manager();
        let provider = TokenProvider::new("token-1");
        let global = TokenProvider::new("never-used");
        manager.set_auth_responder(global.clone());
        manager
            .set_server_auth_responder("secure", provider.clone())
            .unwrap();
        assert!(matches!(
            manager.set_server_auth_responder("nope", provider.clone()),
            Err(McpError::UnknownServer(_))
        ));

        manager
            .connect("secure")
            .await
            .expect("the provider's token works");
        assert_eq!(provider.asked(), 1);
        assert_eq!(
            whoami(&manager, "c1").await.unwrap().output.to_text(),
            "authorized"
        );

        // The token is rotated, and the provider has the new one: the 401
        // in the middle of the call is absorbed.
        server.shared.set_token("token-2");
        *provider.token.lock().unwrap() = "token-2".into();
        assert_eq!(
            whoami(&manager, "c2").await.unwrap().output.to_text(),
            "authorized"
        );
        assert_eq!(provider.asked(), 2);

        // A 403 (the provider's token lacks a scope) is asked about once
        // too, then surfaces with the scopes the server wants.
        *provider.token.lock().unwrap() = READ_ONLY_TOKEN.into();
        server.shared.set_token("token-3");
        let Err(ToolError::AuthRequired(request)) = whoami(&manager, "c3").await else {
            panic!("AuthRequired expected")
        };
        assert_eq!(provider.asked(), 3, "asked once, not in a loop");
        assert_eq!(request.challenge.as_deref(), Some(SCOPE_CHALLENGE));
        assert_eq!(request.metadata["mcp.http_status"], 403);
        assert_eq!(manager.pending_auth().len(), 1);

        // The provider catches up: the next call works again.
        *provider.token.lock().unwrap() = "token-3".into();
        assert_eq!(
            whoami(&manager, "c4").await.unwrap().output.to_text(),
            "authorized"
        );
        assert_eq!(global.asked(), 0, "the server's own provider wins");
    })
    .await;
}
