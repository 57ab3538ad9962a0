//! A configurable tool shared by the integration tests.

#![allow(dead_code)]

use agentkit_tools_core::{
    PermissionRequest, Tool, ToolContext, ToolError, ToolRequest, ToolResult, ToolSpec,
};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// `(tool name as received, input)` of every invoke, shared with the test.
pub type CallLog = Arc<Mutex<Vec<(String, Value)>>>;

/// A tool that records its calls and answers with a fixed output.
pub struct Probe {
    spec: Arc<ToolSpec>,
    requests: Vec<PermissionRequest>,
    output: String,
    /// `(tool name as received, input)` of every invoke.
    pub calls: CallLog,
}

impl Probe {
    pub fn new(name: &str) -> Self {
        Self::with_schema(name, json!({ "type": "object" }))
    }

    pub fn with_schema(name: &str, schema: Value) -> Self {
        Self {
            spec: Arc::new(ToolSpec::new(name, format!("the {name} probe"), schema).unwrap()),
            requests: Vec::new(),
            output: format!("{name} ran"),
            calls: Arc::default(),
        }
    }

    pub fn described(mut self, description: &str) -> Self {
        let mut spec = (*self.spec).clone();
        spec.description = description.into();
        self.spec = Arc::new(spec);
        self
    }

    pub fn proposing(mut self, requests: Vec<PermissionRequest>) -> Self {
        self.requests = requests;
        self
    }

    pub fn answering(mut self, output: impl Into<String>) -> Self {
        self.output = output.into();
        self
    }

    pub fn call_count(&self) -> usize {
        self.calls.lock().unwrap().len()
    }
}

#[async_trait::async_trait]
impl Tool for Probe {
    fn spec(&self) -> Arc<ToolSpec> {
        self.spec.clone()
    }

    fn proposed_requests(&self, _input: &Value) -> Result<Vec<PermissionRequest>, ToolError> {
        Ok(self.requests.clone())
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        self.calls
            .lock()
            .unwrap()
            .push((request.tool_name.to_string(), (*request.input).clone()));
        Ok(ToolResult::new(self.output.clone()))
    }
}

/// Arc'd, with a handle on its call log.
pub fn shared(probe: Probe) -> (Arc<dyn Tool>, CallLog) {
    let calls = probe.calls.clone();
    (Arc::new(probe), calls)
}
