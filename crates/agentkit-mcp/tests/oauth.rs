//! OAuth 2.1 against a real authorization server on 127.0.0.1 (written in
//! `common/oauth_server.rs`) protecting an rmcp server: the challenge leads
//! to the protected-resource metadata, then to the authorization server's
//! metadata; the client registers itself, the authorization URL carries a
//! PKCE challenge, the host "opens" it and hands back the redirect, the
//! code is exchanged (the server checks the verifier), and a token the MCP
//! server stops accepting is refreshed without an error reaching the caller.

mod common;

use agentkit_mcp::{
    AuthResolution, McpCredentials, McpError, McpServerConfig, McpServerManager, OAuthConfig,
    ServerState,
};
use common::oauth_server::{AuthServer, browse};
use common::rmcp_server::{HttpServer, whoami};
use common::within;
use std::sync::atomic::Ordering;
use std::time::Duration;

const REDIRECT: &str = "http://127.0.0.1:9/callback";

/// An MCP server behind the local authorization server, registered as
/// `secure` with `oauth`.
async fn secured(oauth: OAuthConfig) -> (HttpServer, AuthServer, McpServerManager) {
    let server = HttpServer::start("no-token-issued-yet").await;
    let auth = AuthServer::start(server.shared.clone()).await;
    *server.shared.authorization_server.lock().unwrap() = Some(auth.url.clone());
    let manager = McpServerManager::new();
    manager
        .register(
            McpServerConfig::http("secure", &server.url)
                .connect_timeout(Duration::from_secs(10))
                .oauth(oauth),
        )
        .unwrap();
    (server, auth, manager)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_code_with_pkce_then_refresh() {
    within(60, "the OAuth flow", async {
        let (server, auth, manager) =
            secured(OAuthConfig::new(REDIRECT).client_name("agentkit tests")).await;

        // The first connect: discovery and registration happen, and the
        // request carries where to send the user.
        let Err(McpError::AuthRequired(request)) = manager.connect("secure").await else {
            panic!("AuthRequired expected")
        };
        let request = *request;
        let url = request.metadata["mcp.authorization_url"]
            .as_str()
            .unwrap_or_else(|| panic!("no authorization URL in {:?}", request.metadata))
            .to_owned();
        assert!(
            url.starts_with(&format!("{}/authorize?", auth.url)),
            "{url}"
        );
        assert!(url.contains("code_challenge_method=S256"), "{url}");
        assert!(url.contains("code_challenge="), "{url}");
        assert!(matches!(
            manager.status("secure").unwrap().state,
            ServerState::NeedsAuth(_)
        ));

        // The host opens it; the authorization server redirects back.
        let redirect = browse(&url).await;
        assert!(
            redirect.starts_with(&format!("{REDIRECT}?code=")),
            "{redirect}"
        );

        // A redirect whose state was tampered with is refused, and nothing
        // is exchanged.
        let tampered = redirect.replace("state=", "state=forged");
        let refused = manager
            .resolve_auth(AuthResolution::provided(
                request.clone(),
                McpCredentials::oauth_redirect(tampered),
            ))
            .await;
        assert!(
            matches!(refused, Err(McpError::Authorization { .. })),
            "{refused:?}"
        );
        assert_eq!(auth.state.code_exchanges.load(Ordering::SeqCst), 0);

        // The real redirect: the code is exchanged with the PKCE verifier,
        // the server connects, its tools join the catalog.
        manager
            .resolve_auth(AuthResolution::provided(
                request,
                McpCredentials::oauth_redirect(redirect),
            ))
            .await
            .expect("authorized and connected");
        assert_eq!(auth.state.code_exchanges.load(Ordering::SeqCst), 1);
        assert_eq!(auth.state.refused.load(Ordering::SeqCst), 0);
        assert_eq!(
            manager.status("secure").unwrap().state,
            ServerState::Connected
        );
        assert!(manager.pending_auth().is_empty());
        assert!(
            manager
                .snapshot()
                .names()
                .contains(&"mcp_secure_whoami".to_owned())
        );
        assert_eq!(
            whoami(&manager, "c1").await.unwrap().output.to_text(),
            "authorized"
        );

        // The MCP server stops accepting the access token: the 401 in the
        // middle of the call makes the manager refresh (a refresh-token
        // grant), reconnect and send the call again; no error surfaces.
        server.shared.set_token("revoked-by-the-resource-server");
        assert_eq!(
            whoami(&manager, "c2").await.unwrap().output.to_text(),
            "authorized"
        );
        assert_eq!(auth.state.refreshes.load(Ordering::SeqCst), 1);
        assert!(manager.pending_auth().is_empty());
    })
    .await;
}

/// The challenge's first authorization URL, from an `AuthRequired` connect.
async fn authorization_url(manager: &McpServerManager) -> (agentkit_mcp::AuthRequest, String) {
    let Err(McpError::AuthRequired(request)) = manager.connect("secure").await else {
        panic!("AuthRequired expected")
    };
    let url = request.metadata["mcp.authorization_url"]
        .as_str()
        .unwrap_or_else(|| panic!("no authorization URL in {:?}", request.metadata))
        .to_owned();
    (*request, url)
}

fn client_id(url: &str) -> String {
    url.split(['?', '&'])
        .find_map(|pair| pair.strip_prefix("client_id="))
        .unwrap_or_else(|| panic!("no client_id in {url}"))
        .to_owned()
}

/// Re-authorizing (tokens that lapsed for good: the resource refuses the
/// access token and the refresh token is revoked) starts from what the
/// first authorization discovered and registered; a refused code exchange
/// forgets both, and the next authorization finds them again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reauthorization_reuses_discovery_and_registration() {
    within(90, "the re-authorizations", async {
        let (server, auth, manager) = secured(OAuthConfig::new(REDIRECT)).await;
        let lapse = || {
            auth.state.revoke_refresh_tokens();
            server.shared.set_token("revoked-by-the-resource-server");
        };

        let (request, first) = authorization_url(&manager).await;
        assert_eq!(auth.state.metadata_requests.load(Ordering::SeqCst), 1);
        assert_eq!(auth.state.registrations(), 1);
        let redirect = browse(&first).await;
        manager
            .resolve_auth(AuthResolution::provided(
                request,
                McpCredentials::oauth_redirect(redirect),
            ))
            .await
            .expect("authorized");
        manager.disconnect_all().await;

        // The tokens lapse for good: a new authorization URL, for the same
        // client, without discovery or registration.
        lapse();
        let (request, second) = authorization_url(&manager).await;
        assert_ne!(first, second, "a new authorization (new state, new PKCE)");
        assert_eq!(client_id(&first), client_id(&second));
        assert_eq!(auth.state.metadata_requests.load(Ordering::SeqCst), 1);
        assert_eq!(auth.state.registrations(), 1);
        let redirect = browse(&second).await;
        manager
            .resolve_auth(AuthResolution::provided(
                request,
                McpCredentials::oauth_redirect(redirect),
            ))
            .await
            .expect("authorized again");
        assert_eq!(
            whoami(&manager, "c1").await.unwrap().output.to_text(),
            "authorized"
        );
        manager.disconnect_all().await;

        // A code exchange the authorization server refuses: what was kept
        // may be stale, so it is forgotten.
        lapse();
        let (request, third) = authorization_url(&manager).await;
        let redirect = browse(&third).await.replace("code=", "code=unknown-");
        let refused = manager
            .resolve_auth(AuthResolution::provided(
                request,
                McpCredentials::oauth_redirect(redirect),
            ))
            .await;
        assert!(
            matches!(refused, Err(McpError::Authorization { .. })),
            "{refused:?}"
        );
        assert_eq!(auth.state.metadata_requests.load(Ordering::SeqCst), 1);
        let (_, fourth) = authorization_url(&manager).await;
        assert_eq!(auth.state.metadata_requests.load(Ordering::SeqCst), 2);
        assert_eq!(auth.state.registrations(), 2);
        assert_ne!(client_id(&third), client_id(&fourth));
    })
    .await;
}
