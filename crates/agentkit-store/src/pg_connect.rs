//! How a [`PgStore`] reaches its database: TLS and the connection pool.
//!
//! Managed PostgreSQL services require TLS, so the store speaks it through
//! rustls (no OpenSSL): the server's certificate is checked against the CA
//! certificates given in PEM (a service publishes its bundle; a
//! self-signed server is its own CA), with the host name of the connection
//! string. `sslmode` in the connection string says whether TLS is
//! required (`require`) or only preferred (`prefer`, the default).
//!
//! Sessions share a pool of connections, opened as needed up to a limit,
//! instead of queueing behind one: a process running many sessions no
//! longer serializes every write.

use crate::{PgStore, StoreError, StoreResult};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::str::FromStr;
use std::sync::Arc;

/// How many connections a pool opens at most, unless set otherwise.
pub const DEFAULT_MAX_CONNECTIONS: usize = 16;

/// Builds a [`PgStore`]: TLS and the pool size.
///
/// ```no_run
/// # async fn run() -> Result<(), agentkit_store::StoreError> {
/// use agentkit_store::PgStore;
///
/// let ca = std::fs::read("/etc/agentkit/db-ca.pem").expect("the service's CA bundle");
/// let store = PgStore::builder("host=db.example.com user=agent dbname=agents sslmode=require")
///     .tls_roots_pem(&ca)?
///     .max_connections(32)
///     .connect()
///     .await?;
/// # drop(store); Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct PgStoreBuilder {
    conninfo: String,
    tls: Option<Arc<rustls::ClientConfig>>,
    max_connections: usize,
    holder: Option<String>,
}

impl PgStoreBuilder {
    pub(crate) fn new(conninfo: &str) -> Self {
        Self {
            conninfo: conninfo.to_owned(),
            tls: None,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            holder: None,
        }
    }

    /// Speaks TLS, trusting the CA certificates in `pem` (one or more
    /// `BEGIN CERTIFICATE` blocks). [`StoreError::Tls`] if none can be read.
    pub fn tls_roots_pem(mut self, pem: &[u8]) -> StoreResult<Self> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|err| StoreError::Tls(format!("reading PEM: {err}")))?;
            roots
                .add(cert)
                .map_err(|err| StoreError::Tls(format!("CA certificate: {err}")))?;
        }
        if roots.is_empty() {
            return Err(StoreError::Tls("no certificate in the PEM data".into()));
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|err| StoreError::Tls(err.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        self.tls = Some(Arc::new(config));
        Ok(self)
    }

    /// At most this many connections (at least 1; default
    /// [`DEFAULT_MAX_CONNECTIONS`]).
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// Names the holder of the leases this store takes (one word, such as
    /// the URL other replicas reach this one at): a worker that finds a
    /// session leased gets it back at the start of
    /// [`StoreError::Busy`]'s `owner` (`"<holder> <token>"`), and can send
    /// its request there instead of waiting for the lease.
    pub fn lease_holder(mut self, holder: impl Into<String>) -> Self {
        let holder: String = holder.into();
        self.holder = Some(holder.split_whitespace().collect::<Vec<_>>().join("_"));
        self
    }

    /// Connects (one connection, to migrate the schema) and returns the
    /// store.
    pub async fn connect(self) -> StoreResult<PgStore> {
        let config = tokio_postgres::Config::from_str(&self.conninfo)
            .map_err(|err| StoreError::database("postgres", err))?;
        let recycling = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = match self.tls {
            None => Manager::from_config(config, tokio_postgres::NoTls, recycling),
            Some(tls) => Manager::from_config(
                config,
                tokio_postgres_rustls::MakeRustlsConnect::new((*tls).clone()),
                recycling,
            ),
        };
        let pool = Pool::builder(manager)
            .max_size(self.max_connections)
            .build()
            .map_err(|err| StoreError::database("postgres", err))?;
        PgStore::from_pool(pool, self.holder).await
    }
}
