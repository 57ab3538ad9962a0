//! A tool that answers at once with what it was given, for tests and
//! benchmarks that need a real tool round without any tool's own cost.

use agentkit_tools_core::{Tool, ToolContext, ToolError, ToolRequest, ToolResult, ToolSpec};
use std::sync::Arc;

/// The `echo` tool: answers `echo: <text>` for the input `{"text": ...}`.
///
/// ```
/// use agentkit_testkit::EchoTool;
/// use agentkit_tools_core::{Tool, ToolRegistry};
///
/// let registry = ToolRegistry::new().with(EchoTool::new());
/// assert_eq!(EchoTool::new().spec().name, "echo");
/// # drop(registry);
/// ```
#[derive(Clone, Debug)]
pub struct EchoTool(Arc<ToolSpec>);

impl EchoTool {
    /// The tool, with an object schema and no permissions needed.
    pub fn new() -> Self {
        let schema = serde_json::json!({
            "type": "object",
            "properties": { "text": { "type": "string" } }
        });
        Self(Arc::new(
            ToolSpec::new("echo", "Echoes its text.", schema).expect("a valid schema"),
        ))
    }
}

impl Default for EchoTool {
    fn default() -> Self {
        Self::new()
    }
}

/// What every answer starts with.
const PREFIX: &str = "echo: ";

#[async_trait::async_trait]
impl Tool for EchoTool {
    fn spec(&self) -> Arc<ToolSpec> {
        self.0.clone()
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let text = request.input["text"].as_str().unwrap_or("");
        // Sized once: `format!` guesses a capacity for short templates and
        // grows the string twice for a typical answer.
        let mut output = String::with_capacity(PREFIX.len() + text.len());
        output.push_str(PREFIX);
        output.push_str(text);
        Ok(ToolResult::new(output))
    }
}

/// The `get_weather` tool the adapters' recorded traffic uses: input
/// `{"city": ...}`, answer `18°C in <city>`.
///
/// ```
/// use agentkit_testkit::WeatherTool;
///
/// assert_eq!(WeatherTool::spec().name, "get_weather");
/// ```
#[derive(Clone, Debug, Default)]
pub struct WeatherTool;

impl WeatherTool {
    /// Its spec: `get_weather`, "Current weather for a city.", a required
    /// string `city` (the recorded requests carry exactly this).
    pub fn spec() -> ToolSpec {
        let schema = serde_json::json!({
            "type": "object",
            "properties": { "city": { "type": "string" } },
            "required": ["city"]
        });
        ToolSpec::new("get_weather", "Current weather for a city.", schema).expect("a valid schema")
    }
}

#[async_trait::async_trait]
impl Tool for WeatherTool {
    fn spec(&self) -> Arc<ToolSpec> {
        Arc::new(Self::spec())
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let city = request.input["city"].as_str().unwrap_or("?");
        Ok(ToolResult::new(format!("18°C in {city}")))
    }
}
