//! Typed tools: a Rust function and an argument type, no hand-written schema.
//!
//! [`TypedTool::new`] takes a name, a description and an async function of
//! `(Args, ToolContext)`. The JSON Schema the model sees is generated from
//! `Args` (`#[derive(Deserialize, JsonSchema)]`, schemars 1.x, doc comments
//! become descriptions), the call's input is deserialized into `Args`, and a
//! deserialization error reaches the model as
//! [`ToolError::InvalidInput`] naming the field (`` `location.city`: invalid
//! type ``). The function returns anything [`IntoToolResult`]: a
//! [`ToolResult`], or any `Serialize` value (strings become text, everything
//! else structured JSON).
//!
//! This is a builder, not a macro: a derive or attribute macro crate would add
//! a proc-macro compile (syn, quote) to every build for the sake of hiding
//! one closure, and would hide the tool's type from the reader. The builder
//! needs only the `JsonSchema` derive that schemars already ships, composes
//! with ordinary closures (capture a config, a client, a pool), and gives the
//! same `Tool` every other part of agentkit takes.

use crate::{PermissionRequest, Tool, ToolAnnotations, ToolContext, ToolError, ToolRequest};
use crate::{ToolResult, ToolSpec};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

type BoxFuture = Pin<Box<dyn Future<Output = Result<ToolResult, ToolError>> + Send>>;
type Handler = Arc<dyn Fn(&Value, ToolContext) -> BoxFuture + Send + Sync>;
type Requests = Arc<dyn Fn(&Value) -> Result<Vec<PermissionRequest>, ToolError> + Send + Sync>;

/// What a typed tool's function may return.
///
/// Implemented for [`ToolResult`] (full control: error results, metadata)
/// and for every `Serialize` type: a value that serializes to a JSON string
/// becomes text output, anything else structured output.
pub trait IntoToolResult {
    /// The result the model reads.
    fn into_tool_result(self) -> Result<ToolResult, ToolError>;
}

impl IntoToolResult for ToolResult {
    fn into_tool_result(self) -> Result<ToolResult, ToolError> {
        Ok(self)
    }
}

impl<T: Serialize> IntoToolResult for T {
    fn into_tool_result(self) -> Result<ToolResult, ToolError> {
        match serde_json::to_value(self) {
            Ok(Value::String(text)) => Ok(ToolResult::new(text)),
            Ok(value) => Ok(ToolResult::new(value)),
            Err(err) => Err(ToolError::Internal(format!(
                "cannot serialize the tool's output: {err}"
            ))),
        }
    }
}

/// A tool built from an argument type and an async function.
///
/// ```
/// use agentkit_tools_core::{Tool, ToolContext, ToolError, ToolRequest, TypedTool};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// /// Arguments of `add`.
/// #[derive(Deserialize, JsonSchema)]
/// struct AddArgs {
///     /// The first term.
///     a: i64,
///     /// The second term.
///     b: i64,
/// }
///
/// #[derive(Serialize)]
/// struct Sum {
///     sum: i64,
/// }
///
/// let add = TypedTool::new("add", "Adds two integers.", |args: AddArgs, _ctx| async move {
///     Ok::<_, ToolError>(Sum { sum: args.a + args.b })
/// });
/// // The schema comes from the type, doc comments included.
/// let schema = &add.spec().input_schema;
/// assert_eq!(schema["properties"]["a"]["description"], "The first term.");
///
/// # tokio_test_block(async {
/// let call = ToolRequest::new("c1", "add", serde_json::json!({ "a": 2, "b": 3 }));
/// let result = add.invoke(call, ToolContext::detached()).await.unwrap();
/// assert_eq!(result.output, serde_json::json!({ "sum": 5 }).into());
///
/// // A wrong argument names the field.
/// let bad = ToolRequest::new("c2", "add", serde_json::json!({ "a": 2, "b": "three" }));
/// let err = add.invoke(bad, ToolContext::detached()).await.unwrap_err();
/// assert!(matches!(&err, ToolError::InvalidInput(m) if m.starts_with("`b`")), "{err}");
/// # });
/// # fn tokio_test_block(f: impl std::future::Future<Output = ()>) {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Clone)]
pub struct TypedTool {
    spec: Arc<ToolSpec>,
    handler: Handler,
    requests: Option<Requests>,
}

impl std::fmt::Debug for TypedTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedTool")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

/// Deserializes a call's input into `A`; the error names the field.
///
/// ```
/// use agentkit_tools_core::{ToolError, parse_args};
///
/// #[derive(serde::Deserialize, Debug)]
/// struct Args { limit: u8 }
/// let err = parse_args::<Args>(&serde_json::json!({ "limit": 300 })).unwrap_err();
/// assert!(matches!(&err, ToolError::InvalidInput(m) if m.starts_with("`limit`")), "{err}");
/// ```
pub fn parse_args<A: DeserializeOwned>(input: &Value) -> Result<A, ToolError> {
    serde_path_to_error::deserialize(input).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        if path == "." {
            ToolError::InvalidInput(inner.to_string())
        } else {
            ToolError::InvalidInput(format!("`{path}`: {inner}"))
        }
    })
}

/// The JSON Schema of `A` as tools send it: draft 2020-12 with every
/// subschema inlined (no `$defs`, unless the type is recursive), without the
/// `$schema` and `title` keys providers do not want.
///
/// ```
/// #[derive(schemars::JsonSchema)]
/// #[allow(dead_code)]
/// struct Args { path: String, limit: Option<u32> }
/// let schema = agentkit_tools_core::schema_for::<Args>();
/// assert_eq!(schema["type"], "object");
/// assert_eq!(schema["required"], serde_json::json!(["path"]));
/// assert!(schema.get("$schema").is_none());
/// ```
pub fn schema_for<A: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|settings| settings.inline_subschemas = true)
        .into_generator();
    let mut schema = Value::from(generator.into_root_schema_for::<A>());
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
        // A unit struct or `()` says nothing about its shape; the model still
        // needs an object.
        object
            .entry("type")
            .or_insert_with(|| Value::from("object"));
    }
    schema
}

impl TypedTool {
    /// A tool named `name` (must match `^[a-zA-Z0-9_-]{1,64}$`; a bad name
    /// is a programming error and panics, see [`try_new`](Self::try_new)).
    pub fn new<A, O, E, F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        function: F,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: IntoToolResult + 'static,
        E: Into<ToolError> + 'static,
        F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, E>> + Send + 'static,
    {
        Self::try_new(name, description, function).unwrap_or_else(|err| panic!("{err}"))
    }

    /// Like [`new`](Self::new), with an invalid name as an error.
    pub fn try_new<A, O, E, F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        function: F,
    ) -> Result<Self, crate::InvalidToolName>
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: IntoToolResult + 'static,
        E: Into<ToolError> + 'static,
        F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, E>> + Send + 'static,
    {
        let spec = ToolSpec::new(name, description, schema_for::<A>())?;
        let handler: Handler = Arc::new(move |input: &Value, ctx: ToolContext| {
            let args = parse_args::<A>(input);
            let future = args.map(|args| function(args, ctx));
            Box::pin(async move {
                match future?.await {
                    Ok(output) => output.into_tool_result(),
                    Err(err) => Err(err.into()),
                }
            })
        });
        Ok(Self {
            spec: Arc::new(spec),
            handler,
            requests: None,
        })
    }

    /// The permission requests a call would make, computed from its typed
    /// arguments. Without this a typed tool asks for nothing: give every
    /// tool that writes, runs or spends something its requests, so the
    /// permission checker can ask the host first.
    ///
    /// `A` must be the tool's argument type (or another type the same input
    /// deserializes into).
    pub fn with_requests<A, F>(mut self, requests: F) -> Self
    where
        A: DeserializeOwned + 'static,
        F: Fn(&A) -> Result<Vec<PermissionRequest>, ToolError> + Send + Sync + 'static,
    {
        self.requests = Some(Arc::new(move |input: &Value| {
            let args = parse_args::<A>(input)?;
            requests(&args)
        }));
        self
    }

    /// Sets the behaviour hints.
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        Arc::make_mut(&mut self.spec).annotations = annotations;
        self
    }

    /// Changes the generated schema, for what a type cannot say (a maximum
    /// taken from a configuration).
    pub fn map_schema(mut self, f: impl FnOnce(Value) -> Value) -> Self {
        let spec = Arc::make_mut(&mut self.spec);
        spec.input_schema = f(std::mem::take(&mut spec.input_schema));
        self
    }
}

#[async_trait::async_trait]
impl Tool for TypedTool {
    fn spec(&self) -> Arc<ToolSpec> {
        self.spec.clone()
    }

    fn proposed_requests(&self, input: &Value) -> Result<Vec<PermissionRequest>, ToolError> {
        match &self.requests {
            Some(requests) => requests(input),
            None => Ok(Vec::new()),
        }
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        (self.handler)(&request.input, ctx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Location {
        /// City name.
        city: String,
        #[allow(dead_code)]
        country: Option<String>,
    }

    #[derive(Deserialize, JsonSchema)]
    struct WeatherArgs {
        location: Location,
        #[serde(default)]
        days: u8,
        unit: Unit,
    }

    #[derive(Deserialize, JsonSchema, Clone, Copy)]
    #[serde(rename_all = "lowercase")]
    enum Unit {
        Celsius,
        Fahrenheit,
    }

    fn weather() -> TypedTool {
        TypedTool::new(
            "weather",
            "Forecast.",
            |args: WeatherArgs, _ctx| async move {
                let unit = match args.unit {
                    Unit::Celsius => "C",
                    Unit::Fahrenheit => "F",
                };
                Ok::<_, ToolError>(format!(
                    "{} for {} days in {unit}",
                    args.location.city, args.days
                ))
            },
        )
    }

    fn run(tool: &TypedTool, input: Value) -> Result<ToolResult, ToolError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(tool.invoke(ToolRequest::new("c", "t", input), ToolContext::detached()))
    }

    #[test]
    fn the_schema_is_generated_inline_from_the_type() {
        let schema = weather().spec().input_schema.clone();
        assert_eq!(schema["type"], "object");
        assert!(schema.get("$defs").is_none(), "{schema}");
        assert_eq!(
            schema["properties"]["location"]["properties"]["city"]["description"],
            "City name."
        );
        assert_eq!(
            schema["properties"]["unit"]["enum"],
            json!(["celsius", "fahrenheit"])
        );
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(required.contains(&"location") && required.contains(&"unit"));
        assert!(!required.contains(&"days"));
        // The generated schema validates what it describes.
        assert!(
            crate::validate_input(
                &schema,
                &json!({ "location": { "city": "Oslo" }, "unit": "celsius" })
            )
            .is_ok()
        );
    }

    #[test]
    fn string_outputs_are_text_and_others_structured() {
        let out = run(
            &weather(),
            json!({ "location": { "city": "Oslo" }, "days": 2, "unit": "celsius" }),
        )
        .unwrap();
        assert_eq!(out.output, "Oslo for 2 days in C".into());
        let structured = TypedTool::new("s", "", |_: Empty, _| async {
            Ok::<_, ToolError>(vec![1, 2])
        });
        assert_eq!(
            run(&structured, json!({})).unwrap().output,
            json!([1, 2]).into()
        );
    }

    #[derive(Deserialize, JsonSchema)]
    struct Empty {}

    #[test]
    fn deserialization_errors_name_the_field() {
        let cases = [
            (
                json!({ "location": { "city": 3 }, "unit": "celsius" }),
                "`location.city`",
            ),
            (
                json!({ "location": { "city": "x" }, "unit": "kelvin" }),
                "`unit`",
            ),
            (
                json!({ "location": { "city": "x" }, "unit": "celsius", "days": 999 }),
                "`days`",
            ),
            (
                json!({ "location": { "city": "x", "zip": 1 }, "unit": "celsius" }),
                "`location.zip`: unknown field",
            ),
            (json!({ "unit": "celsius" }), "missing field `location`"),
        ];
        for (input, expected) in cases {
            let err = run(&weather(), input.clone()).unwrap_err();
            let ToolError::InvalidInput(message) = &err else {
                panic!("{input}: expected invalid input, got {err:?}");
            };
            assert!(message.contains(expected), "{input}: {message}");
        }
    }

    #[test]
    fn errors_of_the_function_pass_through_and_requests_are_typed() {
        let tool = TypedTool::new("fail", "", |args: Location, _| async move {
            Err::<String, _>(ToolError::ExecutionFailed(format!("no {}", args.city)))
        })
        .with_requests(|args: &Location| {
            Ok(vec![PermissionRequest::custom(
                "weather.lookup",
                format!("look up {}", args.city),
                Value::Null,
            )])
        });
        assert_eq!(
            run(&tool, json!({ "city": "Rome" })).unwrap_err(),
            ToolError::ExecutionFailed("no Rome".into())
        );
        let requests = tool.proposed_requests(&json!({ "city": "Rome" })).unwrap();
        assert_eq!(requests[0].summary, "look up Rome");
        assert!(matches!(
            tool.proposed_requests(&json!({})),
            Err(ToolError::InvalidInput(_))
        ));
    }

    #[test]
    #[should_panic(expected = "invalid tool name")]
    fn a_bad_name_panics_in_new() {
        let _ = TypedTool::new("bad name", "", |_: Empty, _| async {
            Ok::<_, ToolError>("x")
        });
    }
}
