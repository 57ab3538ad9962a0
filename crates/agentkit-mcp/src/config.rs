//! How to reach one MCP server, and how patient to be with it.
//!
//! A [`McpServerConfig`] names a server and says how to start or reach it:
//! a child process speaking MCP over stdio, or a streamable HTTP endpoint.
//! It also carries the two deadlines every server gets: one for connecting
//! (initialize plus discovery) and one for each tool call. The defaults are
//! generous enough for `npx` cold starts and slow tools, and short enough
//! that a wedged server never stalls a turn forever.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// The default time allowed for initialize plus discovery.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// The default deadline of one tool call.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// One MCP server: its name, how to reach it, and its deadlines. Built with
/// [`stdio`](Self::stdio) or [`http`](Self::http) and the setters.
///
/// ```
/// use agentkit_mcp::{DEFAULT_CALL_TIMEOUT, McpServerConfig, McpTransport};
/// use std::time::Duration;
///
/// // A child process over stdio: its command line, environment and directory.
/// let files = McpServerConfig::stdio("files", "npx")
///     .args(["--no-install", "mcp-server-filesystem", "/srv/data"])
///     .env("LOG_LEVEL", "warn")
///     .connect_timeout(Duration::from_secs(20));
/// let McpTransport::Stdio(stdio) = &files.transport else { unreachable!() };
/// assert_eq!(stdio.args, ["--no-install", "mcp-server-filesystem", "/srv/data"]);
/// assert_eq!(files.call_timeout, DEFAULT_CALL_TIMEOUT);
///
/// // A streamable HTTP endpoint with a bearer token, which never shows in logs.
/// let tickets = McpServerConfig::http("tickets", "https://tickets.example/mcp")
///     .bearer_token("s3cret")
///     .header("X-Team", "platform")
///     .call_timeout(Duration::from_secs(15));
/// assert!(!format!("{tickets:?}").contains("s3cret"));
/// let McpTransport::Http(http) = &tickets.transport else { unreachable!() };
/// assert_eq!(http.headers["X-Team"], "platform");
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct McpServerConfig {
    /// The name tools are prefixed with (`mcp_<name>_<tool>`) and that
    /// permission requests and auth requests carry.
    pub name: String,
    /// How to start or reach the server.
    pub transport: McpTransport,
    /// Time allowed for initialize plus discovery.
    pub connect_timeout: Duration,
    /// Deadline of each tool call, counted from when the request is sent;
    /// the call is cancelled on the server when it passes. The time the
    /// user spends answering the call's questions (elicitation) does not
    /// count. A reconnect needed before sending is bounded by
    /// `connect_timeout` instead.
    pub call_timeout: Duration,
}

/// How the manager talks to a server.
#[derive(Clone, Debug)]
#[non_exhaustive]
#[allow(
    clippy::large_enum_variant,
    reason = "built once per server and matched by hosts; a box would only get in their way"
)]
pub enum McpTransport {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio(StdioConfig),
    /// A streamable HTTP endpoint.
    Http(HttpConfig),
}

/// A server started as a child process.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct StdioConfig {
    /// The program to run.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to (or overriding) the inherited environment.
    pub env: BTreeMap<String, String>,
    /// The working directory; the host's when `None`.
    pub cwd: Option<PathBuf>,
}

/// A server reached over streamable HTTP.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The MCP endpoint, such as `https://example.com/mcp`.
    pub url: String,
    /// Headers sent with every request.
    pub headers: BTreeMap<String, String>,
    /// A bearer token sent as `Authorization: Bearer <token>`.
    pub bearer_token: Option<String>,
    /// How often, and how patiently, a broken response stream is resumed
    /// before the call waiting on it fails as unavailable.
    pub stream_retry: StreamRetry,
    /// Authorize with OAuth 2.1 when the server asks (feature `oauth`).
    #[cfg(feature = "oauth")]
    pub oauth: Option<crate::OAuthConfig>,
}

/// How a streamable-HTTP session resumes a server-sent-event stream that
/// broke (the server restarted, a proxy cut the connection, the server
/// died).
///
/// Streamable HTTP lets a client resume a broken stream with a `GET` and
/// `Last-Event-ID`. Left alone, rmcp retries that forever, so a call to a
/// server that died waits until its own deadline, which may be minutes.
/// The manager always bounds it. A stream that broke is resumed at once; a
/// stream the server closed cleanly after `initial_delay` (or the server's
/// own `retry` hint). After the n-th failed attempt the next one waits
/// `initial_delay` × 2ⁿ⁻¹, at most `max_delay`. After `max_attempts`
/// failures the stream is given up, every call waiting on it fails with
/// `ToolError::Unavailable`, and the session is reconnected on the next
/// call.
///
/// The default, 3 attempts with 250 ms then 500 ms between them, gives up
/// on a dead server within about a second (plus the time each attempt takes
/// to be refused). [`StreamRetry::never`] gives up at once.
///
/// ```
/// use agentkit_mcp::{McpServerConfig, StreamRetry};
/// use std::time::Duration;
///
/// let config = McpServerConfig::http("remote", "https://example.com/mcp")
///     .stream_retry(StreamRetry::new(5, Duration::from_millis(500), Duration::from_secs(4)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamRetry {
    /// Resumption attempts before giving up; 0 gives up at once.
    pub max_attempts: usize,
    /// The delay before the first attempt.
    pub initial_delay: Duration,
    /// The longest delay between two attempts.
    pub max_delay: Duration,
}

impl StreamRetry {
    /// `max_attempts` attempts, the delay doubling from `initial_delay` up
    /// to `max_delay`.
    pub const fn new(max_attempts: usize, initial_delay: Duration, max_delay: Duration) -> Self {
        Self {
            max_attempts,
            initial_delay,
            max_delay,
        }
    }

    /// Never resume: a broken stream fails its calls at once.
    pub const fn never() -> Self {
        Self::new(0, Duration::ZERO, Duration::ZERO)
    }

    /// How long to wait after `failures` failed attempts before the next
    /// one, or `None` when the attempts are used up. `delay(0)` is the wait
    /// after a clean close, before the first attempt.
    pub fn delay(&self, failures: usize) -> Option<Duration> {
        if failures >= self.max_attempts {
            return None;
        }
        let doublings = failures.saturating_sub(1).min(31) as u32;
        Some(
            self.initial_delay
                .saturating_mul(2u32.saturating_pow(doublings))
                .min(self.max_delay),
        )
    }

    /// The longest a broken stream waits between its attempts before it is
    /// given up (each attempt's own connect time comes on top).
    pub fn total_delay(&self) -> Duration {
        (1..self.max_attempts)
            .filter_map(|failures| self.delay(failures))
            .sum()
    }
}

impl Default for StreamRetry {
    fn default() -> Self {
        Self::new(3, Duration::from_millis(250), Duration::from_secs(1))
    }
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Header values and tokens are often secrets: name them, never print them.
        f.debug_struct("HttpConfig")
            .field("url", &self.url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .field("stream_retry", &self.stream_retry)
            .finish()
    }
}

impl McpServerConfig {
    /// A server started as `command` and spoken to over stdio.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>) -> Self {
        Self::with_transport(
            name,
            McpTransport::Stdio(StdioConfig {
                command: command.into(),
                ..StdioConfig::default()
            }),
        )
    }

    /// A server reached over streamable HTTP at `url`.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::with_transport(
            name,
            McpTransport::Http(HttpConfig {
                url: url.into(),
                ..HttpConfig::default()
            }),
        )
    }

    /// A server with this transport and the default deadlines.
    pub fn with_transport(name: impl Into<String>, transport: McpTransport) -> Self {
        Self {
            name: name.into(),
            transport,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            call_timeout: DEFAULT_CALL_TIMEOUT,
        }
    }

    /// Adds an argument (stdio servers; ignored for HTTP).
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        if let McpTransport::Stdio(stdio) = &mut self.transport {
            stdio.args.push(arg.into());
        }
        self
    }

    /// Adds arguments (stdio servers; ignored for HTTP).
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        if let McpTransport::Stdio(stdio) = &mut self.transport {
            stdio.args.extend(args.into_iter().map(Into::into));
        }
        self
    }

    /// Sets an environment variable (stdio servers; ignored for HTTP).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Stdio(stdio) = &mut self.transport {
            stdio.env.insert(key.into(), value.into());
        }
        self
    }

    /// Sets the working directory (stdio servers; ignored for HTTP).
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        if let McpTransport::Stdio(stdio) = &mut self.transport {
            stdio.cwd = Some(cwd.into());
        }
        self
    }

    /// Adds a header sent with every request (HTTP servers; ignored for stdio).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Http(http) = &mut self.transport {
            http.headers.insert(name.into(), value.into());
        }
        self
    }

    /// Sets the bearer token (HTTP servers; ignored for stdio). Credentials
    /// given later through `resolve_auth` take precedence.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        if let McpTransport::Http(http) = &mut self.transport {
            http.bearer_token = Some(token.into());
        }
        self
    }

    /// Sets how a broken response stream is resumed (HTTP servers; ignored
    /// for stdio). See [`StreamRetry`].
    pub fn stream_retry(mut self, retry: StreamRetry) -> Self {
        if let McpTransport::Http(http) = &mut self.transport {
            http.stream_retry = retry;
        }
        self
    }

    /// Authorizes with OAuth 2.1 when the server answers `401` (HTTP
    /// servers; ignored for stdio; feature `oauth`). See [`crate::OAuthConfig`].
    #[cfg(feature = "oauth")]
    pub fn oauth(mut self, oauth: crate::OAuthConfig) -> Self {
        if let McpTransport::Http(http) = &mut self.transport {
            http.oauth = Some(oauth);
        }
        self
    }

    /// Sets the time allowed for initialize plus discovery.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the deadline of each tool call.
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_fill_the_matching_transport_only() {
        let stdio = McpServerConfig::stdio("fs", "node")
            .args(["server.js", "stdio"])
            .env("DEBUG", "1")
            .header("X-Ignored", "yes");
        let McpTransport::Stdio(s) = &stdio.transport else {
            panic!("stdio expected")
        };
        assert_eq!(s.args, ["server.js", "stdio"]);
        assert_eq!(s.env["DEBUG"], "1");

        let http = McpServerConfig::http("remote", "http://127.0.0.1:1/mcp")
            .bearer_token("secret")
            .arg("ignored")
            .call_timeout(Duration::from_secs(5));
        let McpTransport::Http(h) = &http.transport else {
            panic!("http expected")
        };
        assert_eq!(h.bearer_token.as_deref(), Some("secret"));
        assert_eq!(http.call_timeout, Duration::from_secs(5));
        assert_eq!(http.connect_timeout, DEFAULT_CONNECT_TIMEOUT);
        assert!(!format!("{h:?}").contains("secret"), "tokens are redacted");
        assert_eq!(h.stream_retry, StreamRetry::default());
    }

    #[test]
    fn stream_retries_are_bounded() {
        let retry = StreamRetry::default();
        let delays: Vec<_> = (0..5).map(|failures| retry.delay(failures)).collect();
        let ms = Duration::from_millis;
        assert_eq!(
            delays,
            [Some(ms(250)), Some(ms(250)), Some(ms(500)), None, None]
        );
        assert_eq!(retry.total_delay(), ms(750));
        assert_eq!(StreamRetry::never().delay(0), None);
        let capped = StreamRetry::new(40, ms(100), ms(300));
        assert_eq!(capped.delay(39), Some(ms(300)), "no overflow, capped");
    }
}
