//! What a compatible server says about itself, asked once at start-up.
//!
//! A local server (llama.cpp, Ollama, vLLM) serves whatever model it was
//! started with, whatever name a request gives. So when `AGENTKIT_MODEL` is
//! not set, the status line should name the model the server lists at
//! `GET {base}/models`, not a silent default; and llama.cpp's `GET /props`
//! tells its context size (`n_ctx`), which compaction and the diagnosis of
//! an over-long prompt use. Nothing here is required: a server that answers
//! neither is used as configured.

use agentkit::http::{HttpClient, HttpConfig};
use serde_json::Value;
use std::time::Duration;

/// How long each question may take: a local server answers at once.
const TIMEOUT: Duration = Duration::from_secs(3);

/// What the server said.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Probe {
    /// The ids `GET {base}/models` listed, in order.
    pub models: Vec<String>,
    /// The context size the server runs with (llama.cpp `/props`).
    pub n_ctx: Option<usize>,
}

/// Asks the server at `base_url` (the `OPENAI_BASE_URL`, usually ending in
/// `/v1`).
pub async fn probe(base_url: &str) -> Probe {
    let config = HttpConfig::default()
        .with_connect_timeout(TIMEOUT)
        .with_idle_timeout(TIMEOUT);
    let Ok(client) = HttpClient::new(config) else {
        return Probe::default();
    };
    let base = base_url.trim_end_matches('/');
    let get = |url: String| {
        let client = client.clone();
        async move { client.get_json(&url).await.ok() }
    };
    let root = base.strip_suffix("/v1").unwrap_or(base);
    // One after the other: a scripted test server answers in order.
    let models = get(format!("{base}/models")).await;
    let props = get(format!("{root}/props")).await;
    Probe {
        models: models.as_ref().map(model_ids).unwrap_or_default(),
        n_ctx: props.as_ref().and_then(context_size),
    }
}

/// The ids of a `/models` answer (`{"data": [{"id": ...}]}`; Ollama's
/// native `{"models": [{"name": ...}]}` too).
fn model_ids(answer: &Value) -> Vec<String> {
    let listed = |key: &str, field: &str| -> Vec<String> {
        answer[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|model| model[field].as_str().map(str::to_owned))
            .collect()
    };
    let ids = listed("data", "id");
    if ids.is_empty() {
        listed("models", "name")
    } else {
        ids
    }
}

/// llama.cpp's context size: `default_generation_settings.n_ctx`, or
/// `n_ctx` at the top in other versions.
fn context_size(props: &Value) -> Option<usize> {
    props["default_generation_settings"]["n_ctx"]
        .as_u64()
        .or_else(|| props["n_ctx"].as_u64())
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| *n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_read() {
        let openai = json!({ "object": "list", "data": [{ "id": "SmolLM2-135M" }, { "id": "b" }] });
        assert_eq!(model_ids(&openai), ["SmolLM2-135M", "b"]);
        assert_eq!(
            model_ids(&json!({ "models": [{ "name": "qwen" }] })),
            ["qwen"]
        );
        assert!(model_ids(&json!({ "detail": "Not Found" })).is_empty());
        let props = json!({ "default_generation_settings": { "n_ctx": 4096 } });
        assert_eq!(context_size(&props), Some(4096));
        assert_eq!(context_size(&json!({ "n_ctx": 2048 })), Some(2048));
        assert_eq!(context_size(&json!({})), None);
    }
}
