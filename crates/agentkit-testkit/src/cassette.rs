//! Record a real provider exchange once, replay it offline forever.
//!
//! A [`Cassette`] holds the requests an adapter sent (JSON bodies, headers
//! without credentials) and the raw bytes each one was answered with (the
//! server-sent events exactly as they arrived). [`CassetteRecorder`] makes
//! one: a proxy on 127.0.0.1 that the adapter is pointed at, forwarding to
//! the real provider. [`Cassette::serve`] replays one: a local server that
//! answers with the recorded bytes, so the real adapter and the real HTTP
//! client decode real traffic without a network or a key, and
//! [`CassetteServer::check_requests`] tells when the adapter's requests no
//! longer match what was recorded.
//!
//! ```
//! use agentkit_testkit::cassette::{Cassette, Interaction};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let cassette = Cassette::new(vec![Interaction::sse(
//!     "/v1/chat/completions",
//!     serde_json::json!({"model": "m", "stream": true}),
//!     "data: {\"choices\":[]}\n\ndata: [DONE]\n\n",
//! )]);
//! let server = cassette.serve().await.unwrap();
//! // Point an adapter at `server.url()`: here, a plain POST.
//! assert!(server.url().starts_with("http://127.0.0.1:"));
//! # });
//! ```

use agentkit_http::testing::{RecordedRequest, ScriptedResponse, TestServer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

/// The file format's version.
pub const CASSETTE_FORMAT: u32 = 1;

/// What stands where a secret was.
pub const REDACTED: &str = "<redacted>";

/// Headers whose values are credentials: never stored.
const CREDENTIAL_HEADERS: [&str; 6] = [
    "authorization",
    "x-api-key",
    "api-key",
    "proxy-authorization",
    "cookie",
    "openai-organization",
];

/// Headers worth keeping in a cassette (the rest are client noise).
const KEPT_HEADERS: [&str; 3] = ["content-type", "anthropic-version", "anthropic-beta"];

/// A recorded exchange: requests and the raw answers they got.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cassette {
    /// [`CASSETTE_FORMAT`].
    pub agentkit_cassette: u32,
    /// The requests and answers, in order.
    pub interactions: Vec<Interaction>,
}

/// One request and its answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interaction {
    /// What the adapter sent.
    pub request: CassetteRequest,
    /// What the server answered.
    pub response: CassetteResponse,
}

/// A recorded request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CassetteRequest {
    /// The method.
    pub method: String,
    /// The path and query (`/v1/chat/completions`).
    pub path: String,
    /// Headers that matter for the exchange, credentials redacted.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// The body: JSON when it parses, a string otherwise.
    pub body: Value,
}

/// A recorded answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CassetteResponse {
    /// The HTTP status.
    pub status: u16,
    /// The content type (`text/event-stream`).
    pub content_type: Option<String>,
    /// The body exactly as received: for a stream, every event and comment
    /// with its line endings.
    pub body: String,
}

/// Why a cassette could not be read, written or replayed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CassetteError {
    /// The file could not be read or written.
    #[error("cassette {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a cassette.
    #[error("cassette {path} is not valid: {source}")]
    Format {
        /// The file.
        path: String,
        /// The cause.
        source: serde_json::Error,
    },
    /// The file's format version is not this one.
    #[error("cassette {path} has format {found}, this testkit reads {CASSETTE_FORMAT}")]
    Version {
        /// The file.
        path: String,
        /// Its version.
        found: u32,
    },
    /// The replay server could not start.
    #[error("the replay server could not start: {0}")]
    Server(std::io::Error),
    /// The adapter's requests no longer match the recording.
    #[error("the requests differ from the cassette (re-record it if the change is wanted): {0}")]
    Mismatch(CassetteMismatch),
    /// An answer was recorded with a body that is not UTF-8.
    #[error("the answer to request {index} is not UTF-8 text")]
    NotText {
        /// Which request.
        index: usize,
    },
}

/// The adapter's requests differ from the recorded ones.
#[derive(Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CassetteMismatch {
    /// A different number of requests.
    #[error("{recorded} request(s) recorded, {received} received")]
    Count {
        /// In the cassette.
        recorded: usize,
        /// Received by the replay server.
        received: usize,
    },
    /// Request `index` differs at `pointer` (a JSON pointer).
    #[error("request {index} differs at {pointer}: recorded {recorded}, sent {sent}")]
    Body {
        /// Which request.
        index: usize,
        /// Where (`/messages/2/content`).
        pointer: String,
        /// The recorded value.
        recorded: String,
        /// The value sent now.
        sent: String,
    },
    /// Request `index` went to another path.
    #[error("request {index} went to {sent}, recorded {recorded}")]
    Path {
        /// Which request.
        index: usize,
        /// The recorded path.
        recorded: String,
        /// The path now.
        sent: String,
    },
}

impl Interaction {
    /// A POST to `path` with this JSON body, answered `200` with these
    /// server-sent events.
    pub fn sse(path: impl Into<String>, body: Value, events: impl Into<String>) -> Self {
        Self {
            request: CassetteRequest {
                method: "POST".into(),
                path: path.into(),
                headers: vec![("content-type".into(), "application/json".into())],
                body,
            },
            response: CassetteResponse {
                status: 200,
                content_type: Some("text/event-stream".into()),
                body: events.into(),
            },
        }
    }

    fn from_exchange(
        index: usize,
        request: RecordedRequest,
        response: ScriptedResponse,
    ) -> Result<Self, CassetteError> {
        let body = serde_json::from_slice(&request.body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&request.body).into()));
        let headers = request
            .headers
            .iter()
            .filter(|(name, _)| {
                KEPT_HEADERS.contains(&name.as_str()) || CREDENTIAL_HEADERS.contains(&name.as_str())
            })
            .map(|(name, value)| {
                let value = if CREDENTIAL_HEADERS.contains(&name.as_str()) {
                    REDACTED.to_owned()
                } else {
                    value.clone()
                };
                (name.clone(), value)
            })
            .collect();
        let content_type = response
            .headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
            .map(|(_, value)| value.clone());
        let body_text =
            String::from_utf8(response.body).map_err(|_| CassetteError::NotText { index })?;
        Ok(Self {
            request: CassetteRequest {
                method: request.method,
                path: request.path,
                headers,
                body,
            },
            response: CassetteResponse {
                status: response.status,
                content_type,
                body: body_text,
            },
        })
    }

    fn scripted(&self) -> ScriptedResponse {
        let mut response = ScriptedResponse::sse(self.response.body.clone())
            .with_status(self.response.status)
            .with_pause(std::time::Duration::ZERO);
        response.headers.clear();
        if let Some(content_type) = &self.response.content_type {
            response
                .headers
                .push(("content-type".into(), content_type.clone()));
        }
        response
    }
}

impl Cassette {
    /// A cassette of these interactions.
    pub fn new(interactions: Vec<Interaction>) -> Self {
        Self {
            agentkit_cassette: CASSETTE_FORMAT,
            interactions,
        }
    }

    /// Reads a cassette file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, CassetteError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| CassetteError::Io {
            path: shown.clone(),
            source,
        })?;
        let cassette: Self =
            serde_json::from_str(&text).map_err(|source| CassetteError::Format {
                path: shown.clone(),
                source,
            })?;
        if cassette.agentkit_cassette != CASSETTE_FORMAT {
            return Err(CassetteError::Version {
                path: shown,
                found: cassette.agentkit_cassette,
            });
        }
        Ok(cassette)
    }

    /// Writes the cassette as pretty JSON, creating the directory.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), CassetteError> {
        let path = path.as_ref();
        let io = |source| CassetteError::Io {
            path: path.display().to_string(),
            source,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        std::fs::write(path, text).map_err(io)
    }

    /// Replaces every occurrence of each secret, in requests and answers,
    /// by [`REDACTED`]. Credential headers are redacted when recorded.
    pub fn redact(&mut self, secrets: &[&str]) {
        let secrets: Vec<&str> = secrets.iter().copied().filter(|s| !s.is_empty()).collect();
        let scrub = |text: &mut String| {
            for secret in &secrets {
                if text.contains(secret) {
                    *text = text.replace(secret, REDACTED);
                }
            }
        };
        for interaction in &mut self.interactions {
            for (_, value) in &mut interaction.request.headers {
                scrub(value);
            }
            redact_value(&mut interaction.request.body, &scrub);
            scrub(&mut interaction.response.body);
        }
    }

    /// Starts a server on 127.0.0.1 that answers requests with the recorded
    /// answers, in order.
    pub async fn serve(&self) -> Result<CassetteServer, CassetteError> {
        self.serve_with(|response| response).await
    }

    /// Like [`serve`](Self::serve), with each answer adjusted first (cut
    /// into pieces, slowed down, left stalling).
    pub async fn serve_with(
        &self,
        adjust: impl Fn(ScriptedResponse) -> ScriptedResponse,
    ) -> Result<CassetteServer, CassetteError> {
        let script = self.interactions.iter().map(|i| adjust(i.scripted()));
        let server = TestServer::start(script)
            .await
            .map_err(CassetteError::Server)?;
        Ok(CassetteServer {
            server,
            cassette: self.clone(),
        })
    }
}

fn redact_value(value: &mut Value, scrub: &impl Fn(&mut String)) {
    match value {
        Value::String(text) => scrub(text),
        Value::Array(items) => items.iter_mut().for_each(|v| redact_value(v, scrub)),
        Value::Object(map) => map.values_mut().for_each(|v| redact_value(v, scrub)),
        _ => {}
    }
}

/// A cassette being replayed; stops when dropped.
pub struct CassetteServer {
    server: TestServer,
    cassette: Cassette,
}

impl CassetteServer {
    /// The server's root, `http://127.0.0.1:<port>`; an adapter's base URL
    /// is this plus the recorded prefix (`/v1`).
    pub fn url(&self) -> &str {
        self.server.url()
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }

    /// Checks that the adapter sent what was recorded: as many requests,
    /// to the same paths, with equal JSON bodies (redacted values match
    /// anything).
    pub fn check_requests(&self) -> Result<(), CassetteMismatch> {
        let received = self.server.requests();
        let recorded = &self.cassette.interactions;
        if received.len() != recorded.len() {
            return Err(CassetteMismatch::Count {
                recorded: recorded.len(),
                received: received.len(),
            });
        }
        for (index, (sent, recorded)) in received.iter().zip(recorded).enumerate() {
            if sent.path != recorded.request.path {
                return Err(CassetteMismatch::Path {
                    index,
                    recorded: recorded.request.path.clone(),
                    sent: sent.path.clone(),
                });
            }
            let body = serde_json::from_slice(&sent.body)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&sent.body).into()));
            if let Some((pointer, was, now)) = first_difference(&recorded.request.body, &body, "") {
                return Err(CassetteMismatch::Body {
                    index,
                    pointer,
                    recorded: was,
                    sent: now,
                });
            }
        }
        Ok(())
    }
}

/// The first place where `sent` differs from `recorded`, as a JSON pointer.
fn first_difference(recorded: &Value, sent: &Value, at: &str) -> Option<(String, String, String)> {
    match (recorded, sent) {
        (Value::String(text), _) if text.contains(REDACTED) => None,
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|key| {
                let pointer = format!("{at}/{key}");
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => first_difference(x, y, &pointer),
                    (x, y) => Some((pointer, show(x), show(y))),
                }
            })
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| first_difference(x, y, &format!("{at}/{i}"))),
        (a, b) if a == b => None,
        (a, b) => Some((at.to_owned(), a.to_string(), b.to_string())),
    }
}

fn show(value: Option<&Value>) -> String {
    value.map_or_else(|| "(absent)".to_owned(), Value::to_string)
}

/// A test's cassette, replayed, or recorded when an upstream is given.
///
/// The usual pattern: a test opens its cassette with the upstream from an
/// environment variable (`None` in CI), points the adapter at
/// [`url`](Self::url), runs, and calls [`finish`](Self::finish), which
/// saves the recording or checks that the adapter sent what was recorded.
pub enum CassetteSession {
    /// Replaying a file.
    Replay(CassetteServer),
    /// Recording to a file.
    Record {
        /// The proxy.
        recorder: CassetteRecorder,
        /// Where the cassette goes.
        path: std::path::PathBuf,
    },
}

impl CassetteSession {
    /// Records through a proxy to `upstream` when it is `Some`, replays the
    /// file at `path` otherwise.
    pub async fn open(
        path: impl AsRef<Path>,
        upstream: Option<&str>,
    ) -> Result<Self, CassetteError> {
        let path = path.as_ref().to_path_buf();
        match upstream {
            Some(upstream) => Ok(Self::Record {
                recorder: CassetteRecorder::start(upstream).await?,
                path,
            }),
            None => Ok(Self::Replay(Cassette::load(&path)?.serve().await?)),
        }
    }

    /// Opens the cassette at `path` as a test does: replayed, unless the
    /// `AGENTKIT_RECORD` variable asks to record it: `fixtures` records it
    /// from these scripted answers (a wire-format fixture as upstream), a
    /// root URL records it from that real server. The fixture server is
    /// returned too: keep it alive until [`finish`](Self::finish).
    pub async fn from_env(
        path: impl AsRef<Path>,
        fixtures: impl IntoIterator<Item = ScriptedResponse>,
    ) -> Result<(Self, Option<TestServer>), CassetteError> {
        let (upstream, server) = match std::env::var("AGENTKIT_RECORD").ok().as_deref() {
            Some("fixtures") => {
                let server = TestServer::start(fixtures)
                    .await
                    .map_err(CassetteError::Server)?;
                (Some(server.url().to_owned()), Some(server))
            }
            Some(url) => (Some(url.to_owned()), None),
            None => (None, None),
        };
        Ok((Self::open(path, upstream.as_deref()).await?, server))
    }

    /// The root the adapter is pointed at.
    pub fn url(&self) -> &str {
        match self {
            Self::Replay(server) => server.url(),
            Self::Record { recorder, .. } => recorder.url(),
        }
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        match self {
            Self::Replay(server) => server.requests(),
            Self::Record { recorder, .. } => recorder.proxy.requests(),
        }
    }

    /// `true` when recording.
    pub fn is_recording(&self) -> bool {
        matches!(self, Self::Record { .. })
    }

    /// Saves the recording (these secrets redacted), or checks the replayed
    /// requests against it.
    pub fn finish(self, secrets: &[&str]) -> Result<(), CassetteError> {
        match self {
            Self::Replay(server) => server.check_requests().map_err(CassetteError::Mismatch),
            Self::Record { recorder, path } => recorder.cassette(secrets)?.save(path),
        }
    }
}

/// Records the exchanges of an adapter pointed at it.
pub struct CassetteRecorder {
    proxy: TestServer,
}

impl CassetteRecorder {
    /// Starts a recording proxy on 127.0.0.1 in front of the real server's
    /// root (`https://api.openai.com`, `http://127.0.0.1:8080`); point the
    /// adapter at [`url`](Self::url) plus the usual prefix (`/v1`).
    pub async fn start(upstream: impl Into<String>) -> Result<Self, CassetteError> {
        let proxy = TestServer::proxy(upstream)
            .await
            .map_err(CassetteError::Server)?;
        Ok(Self { proxy })
    }

    /// The proxy's root.
    pub fn url(&self) -> &str {
        self.proxy.url()
    }

    /// The cassette of everything recorded so far, credential headers and
    /// these secrets redacted.
    pub fn cassette(&self, secrets: &[&str]) -> Result<Cassette, CassetteError> {
        let interactions = self
            .proxy
            .exchanges()
            .into_iter()
            .enumerate()
            .map(|(index, (request, response))| {
                Interaction::from_exchange(index, request, response)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut cassette = Cassette::new(interactions);
        cassette.redact(secrets);
        Ok(cassette)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn differences_are_found_and_redacted_values_match_anything() {
        let recorded = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "key": "<redacted>"});
        let same = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "key": "sk-live"});
        assert_eq!(first_difference(&recorded, &same, ""), None);
        let other =
            json!({"model": "m", "messages": [{"role": "user", "content": "ho"}], "key": "x"});
        assert_eq!(
            first_difference(&recorded, &other, ""),
            Some((
                "/messages/0/content".into(),
                "\"hi\"".into(),
                "\"ho\"".into()
            ))
        );
        let missing = json!({"model": "m", "key": "x"});
        assert_eq!(
            first_difference(&recorded, &missing, "").unwrap().0,
            "/messages"
        );
    }

    #[test]
    fn redaction_reaches_headers_bodies_and_answers() {
        let mut interaction = Interaction::sse(
            "/v1/x",
            json!({"user": "sk-live-123", "nested": ["a sk-live-123 b"]}),
            "data: {\"echo\":\"sk-live-123\"}\n\n",
        );
        interaction
            .request
            .headers
            .push(("x-trace".into(), "sk-live-123".into()));
        let mut cassette = Cassette::new(vec![interaction]);
        cassette.redact(&["sk-live-123", ""]);
        let text = serde_json::to_string(&cassette).unwrap();
        assert!(!text.contains("sk-live-123"), "{text}");
        assert_eq!(text.matches(REDACTED).count(), 4);
    }
}
