//! An agent's spans, exported through OpenTelemetry.
//!
//! agentkit instruments itself with `tracing` spans named after the
//! OpenTelemetry GenAI conventions (`invoke_agent`, `chat`,
//! `execute_tool`), and the HTTP layer adds one span per provider request.
//! It does not depend on OpenTelemetry: a host that wants traces in a
//! collector bridges `tracing` to it. This program is that bridge, in full:
//! an SDK tracer provider with a span exporter, the
//! `tracing-opentelemetry` layer, one agent turn with a tool call, and the
//! exported spans printed as a tree.
//!
//! The exporter here prints; a real deployment registers an OTLP exporter
//! (the `opentelemetry-otlp` crate implements the same `SpanExporter`
//! trait) and changes nothing else. With no provider configured the model
//! is a local server on 127.0.0.1 that answers like an OpenAI-compatible
//! one, so the HTTP spans are real; with `OPENAI_API_KEY`,
//! `ANTHROPIC_API_KEY` or `OPENAI_BASE_URL` set, the real provider answers.

use agentkit::core::Item;
use agentkit::prelude::{Agent, LoopInterrupt, LoopStep, SessionConfig, ToolError, TypedTool};
use agentkit::provider::{ConfigError, DynModel, ProviderConfig};
use agentkit::tools::ToolRegistry;
use agentkit_http::testing::{ScriptedResponse, TestServer};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use std::collections::HashSet;
use std::error::Error;
use std::sync::{Arc, Mutex};
use tracing_subscriber::layer::SubscriberExt as _;

/// Keeps every exported span so `main` can print them once the turn is
/// done. An OTLP exporter would send each batch to a collector instead.
#[derive(Clone, Debug, Default)]
struct CollectingExporter(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for CollectingExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(batch);
        Ok(())
    }
}

/// The arguments of the example's one tool.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct WeatherArgs {
    /// The city, in English.
    city: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn Error>> {
    // 1. OpenTelemetry: spans end up in the exporter as soon as they close.
    let exporter = CollectingExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let tracer = provider.tracer("tracing-otel");
    // 2. The bridge: every `tracing` span becomes an OpenTelemetry span.
    let subscriber =
        tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(tracer));
    tracing::subscriber::set_global_default(subscriber)?;

    // 3. An agent, as usual. Recording content (prompts, tool arguments and
    // results) on spans is off by default, since traces often leave the
    // machine; this example turns it on to show where it goes.
    let (model, _stand_in) = model().await?;
    let weather = TypedTool::new(
        "get_weather",
        "The current weather in a city.",
        |args: WeatherArgs, _ctx| async move {
            Ok::<_, ToolError>(format!("sunny, 21 °C in {}", args.city))
        },
    );
    let agent = Agent::builder()
        .model(model)
        .add_tool_source(ToolRegistry::new().with(weather))
        .record_content_in_traces(true)
        .input(vec![Item::user("What is the weather in Paris?")])
        .build()?;
    let mut driver = agent.start(SessionConfig::new("traced-session")).await?;
    let answer = loop {
        match driver.next().await? {
            LoopStep::Finished(result) => break result,
            LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) => {
                pending.approve(&mut driver)?
            }
            LoopStep::Interrupt(_) => {}
        }
    };
    println!(
        "answer: {}",
        answer
            .items
            .last()
            .map(Item::text_content)
            .unwrap_or_default()
    );

    // 4. Flush, and show what was exported.
    provider.force_flush()?;
    provider.shutdown()?;
    let spans = exporter.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
    println!("\nexported {} spans:", spans.len());
    print_tree(&spans);

    let names: HashSet<&str> = spans.iter().map(|span| span.name.as_ref()).collect();
    for expected in ["invoke_agent", "chat", "execute_tool"] {
        if !names.contains(expected) {
            return Err(format!("no `{expected}` span was exported").into());
        }
    }
    Ok(())
}

/// The configured provider, or a local stand-in that first asks for the
/// tool and then answers (kept alive by the returned server).
async fn model() -> Result<(DynModel, Option<TestServer>), Box<dyn Error>> {
    match ProviderConfig::from_env() {
        Ok(config) => return Ok((config.build()?, None)),
        Err(ConfigError::NoProvider) => {}
        Err(err) => return Err(err.into()),
    }
    println!("no provider configured: a local OpenAI-compatible stand-in answers\n");
    let chunk = |delta: &str, finish: &str| {
        format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
        )
    };
    let call = r#"{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}"#;
    let usage =
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":52,\"completion_tokens\":9}}\n\n";
    let server = TestServer::start([
        ScriptedResponse::sse(
            chunk(call, "null") + &chunk("{}", "\"tool_calls\"") + usage + "data: [DONE]\n\n",
        ),
        ScriptedResponse::sse(
            chunk(r#"{"content":"It is sunny in Paris, 21 °C."}"#, "\"stop\"")
                + usage
                + "data: [DONE]\n\n",
        ),
    ])
    .await?;
    let base_url = format!("{}/v1", server.url());
    let lookup = |name: &str| match name {
        "OPENAI_BASE_URL" => Some(base_url.clone()),
        "AGENTKIT_MODEL" => Some("stand-in".to_owned()),
        _ => None,
    };
    Ok((ProviderConfig::from_lookup(lookup)?.build()?, Some(server)))
}

/// Attributes the bridge adds to every span (source location, thread, busy
/// and idle time), left out of the printout to keep it readable.
fn is_bookkeeping(key: &str) -> bool {
    key.starts_with("code.")
        || key.starts_with("thread.")
        || matches!(key, "target" | "busy_ns" | "idle_ns")
}

/// Prints spans as a tree, children under their parent in start order, with
/// their duration and attributes.
fn print_tree(spans: &[SpanData]) {
    let ids: HashSet<_> = spans.iter().map(|s| s.span_context.span_id()).collect();
    let mut roots: Vec<&SpanData> = spans
        .iter()
        .filter(|s| !ids.contains(&s.parent_span_id))
        .collect();
    roots.sort_by_key(|s| s.start_time);
    for root in roots {
        print_span(root, spans, 0);
    }
}

fn print_span(span: &SpanData, all: &[SpanData], depth: usize) {
    let took = span
        .end_time
        .duration_since(span.start_time)
        .unwrap_or_default();
    let attributes: Vec<String> = span
        .attributes
        .iter()
        .filter(|kv| !is_bookkeeping(kv.key.as_str()))
        .map(|kv| {
            let value = kv.value.to_string();
            let value = match value.char_indices().nth(60) {
                Some((cut, _)) => format!("{}…", &value[..cut]),
                None => value,
            };
            format!("{}={value}", kv.key)
        })
        .collect();
    println!(
        "{:indent$}{} ({:.1} ms) {}",
        "",
        span.name,
        took.as_secs_f64() * 1000.0,
        attributes.join(" "),
        indent = depth * 2
    );
    let mut children: Vec<&SpanData> = all
        .iter()
        .filter(|s| s.parent_span_id == span.span_context.span_id())
        .collect();
    children.sort_by_key(|s| s.start_time);
    for child in children {
        print_span(child, all, depth + 1);
    }
}
