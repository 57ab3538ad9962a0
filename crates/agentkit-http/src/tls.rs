//! The TLS crypto provider every HTTP client in agentkit uses.
//!
//! reqwest's default rustls setup brings the aws-lc-rs provider, whose C
//! library (aws-lc-sys) was the longest single item of a cold build. agentkit
//! builds reqwest without a provider and installs rustls's `ring` provider as
//! the process default instead, before any client is built.

/// Installs rustls's `ring` provider as the process-wide default, unless a
/// provider is installed already (by this call or by the host).
///
/// [`HttpClient::new`](crate::HttpClient::new), the one constructor every
/// provider adapter builds its client with, calls it itself; a host only
/// needs it when it builds its own `reqwest::Client` on agentkit's reqwest
/// features (they carry no provider of their own). Calling it again is free.
///
/// ```
/// agentkit_http::install_tls_provider();
/// agentkit_http::install_tls_provider();
/// assert!(rustls::crypto::CryptoProvider::get_default().is_some());
/// ```
pub fn install_tls_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing the race to another thread's install is fine: a provider is
        // installed either way.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
