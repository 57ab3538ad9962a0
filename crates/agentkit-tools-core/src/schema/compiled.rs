//! A tool's input schema compiled once, for the common case: the input is
//! valid.
//!
//! [`validate_input`](super::validate_input) reads the schema as JSON at
//! every call: it finds each node's keywords by scanning its members and
//! follows `properties` through a map of strings. Most calls are valid, so
//! the catalog compiles each tool's schema once into plain checks (type
//! bits, required names, sorted properties) that only answer "valid". When
//! they cannot say so, the call goes through `validate_input`, which words
//! the violations: the errors a model reads come from one place, and the
//! compiled form never has to agree with it on anything but acceptance.
//!
//! Schemas with `$ref`, `allOf`, `anyOf`, `oneOf` or `not` are not compiled
//! (they need the whole validator's bookkeeping); nor are schemas nested
//! deeper than the validator's depth cap.

use super::{MAX_DEPTH, MAX_STEPS, is_type, json_equal};
use serde_json::{Map, Value};

/// A schema compiled for acceptance; see the module docs.
#[derive(Debug)]
pub(crate) struct CompiledSchema {
    root: Node,
}

impl CompiledSchema {
    /// The compiled form of `schema`, or `None` when it uses keywords only
    /// the full validator handles.
    pub(crate) fn compile(schema: &Value) -> Option<Self> {
        Some(Self {
            root: Node::compile(schema, 0)?,
        })
    }

    /// `true` when `input` is certainly valid: `validate_input` would
    /// accept it. `false` means "ask `validate_input`".
    pub(crate) fn accepts(&self, input: &Value) -> bool {
        let mut steps = 0;
        self.root.accepts(input, &mut steps)
    }
}

#[derive(Debug)]
enum Node {
    /// `true`, or a schema with no keyword this validator knows.
    Any,
    /// `false`.
    Never,
    Checks(Box<Checks>),
}

/// Type names as bits; an unknown name constrains nothing.
const OBJECT: u8 = 1;
const ARRAY: u8 = 2;
const STRING: u8 = 4;
const BOOLEAN: u8 = 8;
const NULL: u8 = 16;
const NUMBER: u8 = 32;
const INTEGER: u8 = 64;

#[derive(Debug, Default)]
struct Checks {
    nullable: bool,
    /// The allowed types, `None` for any.
    types: Option<u8>,
    constant: Option<Value>,
    options: Option<Vec<Value>>,
    required: Vec<String>,
    /// Sorted by name.
    properties: Vec<(String, Node)>,
    additional: Additional,
    items: Items,
    min_items: Option<u64>,
    max_items: Option<u64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    exclusive_minimum: Option<f64>,
    exclusive_maximum: Option<f64>,
}

#[derive(Debug, Default)]
enum Additional {
    #[default]
    Any,
    Deny,
    Schema(Node),
}

#[derive(Debug, Default)]
enum Items {
    #[default]
    Any,
    All(Node),
    Tuple(Vec<Node>),
}

impl Node {
    fn compile(schema: &Value, depth: usize) -> Option<Self> {
        if depth > MAX_DEPTH {
            return None;
        }
        let members = match schema {
            Value::Bool(true) => return Some(Self::Any),
            Value::Bool(false) => return Some(Self::Never),
            Value::Object(members) => members,
            // A malformed schema constrains nothing (as in the validator).
            _ => return Some(Self::Any),
        };
        let mut checks = Checks::default();
        let mut any_keyword = false;
        for (key, value) in members {
            any_keyword |= checks.take(key, value, depth)?;
        }
        Some(if any_keyword {
            Self::Checks(Box::new(checks))
        } else {
            Self::Any
        })
    }

    fn accepts(&self, value: &Value, steps: &mut usize) -> bool {
        *steps += 1;
        if *steps > MAX_STEPS {
            // The validator reports "too complex" past this point.
            return false;
        }
        match self {
            Self::Any => true,
            Self::Never => false,
            Self::Checks(checks) => checks.accepts(value, steps),
        }
    }
}

impl Checks {
    /// Takes one keyword; `Some(true)` when it is one the validator knows,
    /// `None` when it needs the whole validator.
    fn take(&mut self, key: &str, value: &Value, depth: usize) -> Option<bool> {
        let bound = || value.as_f64();
        match key {
            "$ref" | "allOf" | "anyOf" | "oneOf" | "not" => return None,
            "nullable" => self.nullable = value == &Value::Bool(true),
            "type" => self.types = types(value),
            "const" => self.constant = Some(value.clone()),
            "enum" => self.options = value.as_array().cloned(),
            "required" => {
                if let Value::Array(names) = value {
                    self.required = names
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect();
                }
            }
            "properties" => {
                if let Value::Object(properties) = value {
                    self.properties = properties
                        .iter()
                        .map(|(name, schema)| {
                            Some((name.clone(), Node::compile(schema, depth + 1)?))
                        })
                        .collect::<Option<_>>()?;
                    self.properties.sort_by(|a, b| a.0.cmp(&b.0));
                }
            }
            "additionalProperties" => {
                self.additional = match value {
                    Value::Bool(false) => Additional::Deny,
                    Value::Object(_) => Additional::Schema(Node::compile(value, depth + 1)?),
                    _ => Additional::Any,
                }
            }
            "items" => {
                self.items = match value {
                    Value::Object(_) | Value::Bool(_) => {
                        Items::All(Node::compile(value, depth + 1)?)
                    }
                    Value::Array(tuple) => Items::Tuple(
                        tuple
                            .iter()
                            .map(|schema| Node::compile(schema, depth + 1))
                            .collect::<Option<_>>()?,
                    ),
                    _ => Items::Any,
                }
            }
            "minItems" => self.min_items = value.as_u64(),
            "maxItems" => self.max_items = value.as_u64(),
            "minLength" => self.min_length = value.as_u64(),
            "maxLength" => self.max_length = value.as_u64(),
            "minimum" => self.minimum = bound(),
            "maximum" => self.maximum = bound(),
            "exclusiveMinimum" => self.exclusive_minimum = bound(),
            "exclusiveMaximum" => self.exclusive_maximum = bound(),
            _ => return Some(false),
        }
        Some(true)
    }

    fn accepts(&self, value: &Value, steps: &mut usize) -> bool {
        if self.nullable && value.is_null() {
            return true;
        }
        if let Some(types) = self.types
            && types & type_bits(value) == 0
        {
            return false;
        }
        if let Some(constant) = &self.constant
            && !json_equal(constant, value)
        {
            return false;
        }
        if let Some(options) = &self.options
            && !options.iter().any(|option| json_equal(option, value))
        {
            return false;
        }
        match value {
            Value::Object(object) => self.accepts_object(object, steps),
            Value::Array(items) => self.accepts_array(items, steps),
            Value::String(text) => self.accepts_string(text),
            Value::Number(_) => self.accepts_number(value),
            Value::Bool(_) | Value::Null => true,
        }
    }

    fn accepts_object(&self, object: &Map<String, Value>, steps: &mut usize) -> bool {
        if !self.required.iter().all(|name| object.contains_key(name)) {
            return false;
        }
        object.iter().all(|(name, member)| {
            match self
                .properties
                .binary_search_by(|(property, _)| property.as_str().cmp(name))
            {
                Ok(at) => self.properties[at].1.accepts(member, steps),
                Err(_) => match &self.additional {
                    Additional::Any => true,
                    Additional::Deny => false,
                    Additional::Schema(schema) => schema.accepts(member, steps),
                },
            }
        })
    }

    fn accepts_array(&self, items: &[Value], steps: &mut usize) -> bool {
        let len = items.len() as u64;
        if self.min_items.is_some_and(|min| len < min)
            || self.max_items.is_some_and(|max| len > max)
        {
            return false;
        }
        match &self.items {
            Items::Any => true,
            Items::All(schema) => items.iter().all(|item| schema.accepts(item, steps)),
            Items::Tuple(tuple) => tuple
                .iter()
                .zip(items)
                .all(|(schema, item)| schema.accepts(item, steps)),
        }
    }

    fn accepts_string(&self, text: &str) -> bool {
        if self.min_length.is_none() && self.max_length.is_none() {
            return true;
        }
        // JSON Schema counts characters, not bytes.
        let chars = text.chars().count() as u64;
        !(self.min_length.is_some_and(|min| chars < min)
            || self.max_length.is_some_and(|max| chars > max))
    }

    fn accepts_number(&self, value: &Value) -> bool {
        let Some(number) = value.as_f64() else {
            return true;
        };
        !(self.minimum.is_some_and(|min| number < min)
            || self.maximum.is_some_and(|max| number > max)
            || self.exclusive_minimum.is_some_and(|min| number <= min)
            || self.exclusive_maximum.is_some_and(|max| number >= max))
    }
}

/// The bits of a `type` keyword; `None` when it constrains nothing.
fn types(expected: &Value) -> Option<u8> {
    let bit = |name: &str| match name {
        "object" => Some(OBJECT),
        "array" => Some(ARRAY),
        "string" => Some(STRING),
        "boolean" => Some(BOOLEAN),
        "null" => Some(NULL),
        "number" => Some(NUMBER),
        "integer" => Some(INTEGER),
        _ => None,
    };
    match expected {
        Value::String(name) => bit(name),
        Value::Array(names) => names
            .iter()
            .filter_map(Value::as_str)
            .try_fold(0, |bits, name| Some(bits | bit(name)?)),
        _ => None,
    }
}

/// The type bits a value satisfies (a whole number is an integer too).
fn type_bits(value: &Value) -> u8 {
    match value {
        Value::Object(_) => OBJECT,
        Value::Array(_) => ARRAY,
        Value::String(_) => STRING,
        Value::Bool(_) => BOOLEAN,
        Value::Null => NULL,
        Value::Number(_) if is_type("integer", value) => NUMBER | INTEGER,
        Value::Number(_) => NUMBER,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate_input;
    use serde_json::json;

    /// Every schema and input of the table: the compiled form accepts
    /// exactly what `validate_input` accepts (or is not made).
    #[test]
    fn accepts_what_the_validator_accepts() {
        let schemas = [
            json!({ "type": "object", "properties": { "text": { "type": "string" } } }),
            json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "minLength": 1, "maxLength": 4 },
                    "depth": { "type": "integer", "minimum": 0, "exclusiveMaximum": 10 },
                    "mode": { "enum": ["r", "w"] },
                    "tags": { "type": "array", "items": { "type": "string" }, "maxItems": 2 },
                    "pair": { "type": "array", "items": [{ "type": "string" }, { "type": "number" }] },
                    "note": { "type": ["string", "null"] },
                    "old": { "type": "string", "nullable": true },
                    "fixed": { "const": 1 }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
            json!({ "type": "object", "additionalProperties": { "type": "number" } }),
            json!({ "type": "weird" }),
            json!({ "type": [] }),
            json!(true),
            json!(false),
            json!({ "description": "anything" }),
        ];
        let inputs = [
            json!({}),
            json!({ "text": "hi" }),
            json!({ "text": 1 }),
            json!({ "path": "a" }),
            json!({ "path": "" }),
            json!({ "path": "abcde" }),
            json!({ "path": "äöüß" }),
            json!({ "path": "a", "depth": 3 }),
            json!({ "path": "a", "depth": 3.0 }),
            json!({ "path": "a", "depth": 3.5 }),
            json!({ "path": "a", "depth": 10 }),
            json!({ "path": "a", "depth": -1 }),
            json!({ "path": "a", "mode": "r" }),
            json!({ "path": "a", "mode": "x" }),
            json!({ "path": "a", "tags": ["x", "y"] }),
            json!({ "path": "a", "tags": ["x", "y", "z"] }),
            json!({ "path": "a", "tags": [1] }),
            json!({ "path": "a", "pair": ["x", 1, true] }),
            json!({ "path": "a", "pair": [1, "x"] }),
            json!({ "path": "a", "note": null }),
            json!({ "path": "a", "old": null }),
            json!({ "path": "a", "fixed": 1.0 }),
            json!({ "path": "a", "fixed": 2 }),
            json!({ "path": "a", "extra": 1 }),
            json!({ "x": 1, "y": 2.5 }),
            json!({ "x": "1" }),
            json!(null),
            json!("text"),
            json!([1, 2]),
        ];
        for schema in &schemas {
            let compiled = CompiledSchema::compile(schema).expect("a compilable schema");
            for input in &inputs {
                assert_eq!(
                    compiled.accepts(input),
                    validate_input(schema, input).is_ok(),
                    "schema {schema}, input {input}"
                );
            }
        }
    }

    #[test]
    fn combinators_and_references_are_left_to_the_validator() {
        for schema in [
            json!({ "anyOf": [{ "type": "string" }] }),
            json!({ "properties": { "a": { "$ref": "#/$defs/a" } }, "$defs": { "a": true } }),
            json!({ "items": { "not": { "type": "string" } } }),
            json!({ "allOf": [] }),
            json!({ "oneOf": [] }),
        ] {
            assert!(CompiledSchema::compile(&schema).is_none(), "{schema}");
        }
    }

    #[test]
    fn a_schema_deeper_than_the_cap_is_not_compiled() {
        let mut schema = json!({ "type": "string" });
        for _ in 0..=MAX_DEPTH {
            schema = json!({ "type": "object", "properties": { "a": schema } });
        }
        assert!(CompiledSchema::compile(&schema).is_none());
    }
}
