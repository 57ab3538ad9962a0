//! Helpers shared by the adapter tests (running one model call of any
//! adapter is `agentkit_testkit::adapter`).

#![allow(dead_code)]

/// A fixture file's text.
pub fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}
