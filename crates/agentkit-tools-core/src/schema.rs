//! Checking a tool's input against its JSON Schema before the tool runs.
//!
//! Models get arguments wrong often enough that a tool should never see input
//! its schema rules out, and the model needs to be told exactly what to fix.
//! Tool schemas use a small part of JSON Schema, so this is a hand-written
//! validator for that part rather than a general-purpose engine with its
//! dependency tree: `type` (one or a list, so `["string", "null"]` makes a
//! field nullable), `properties`, `required`, `additionalProperties` (`false`
//! or a schema), `enum`, `const`, `items`, `minimum`, `maximum`,
//! `exclusiveMinimum`, `exclusiveMaximum`, `minLength`, `maxLength`,
//! `minItems`, `maxItems`, `anyOf`, `oneOf`, `allOf`, `not`, OpenAPI's
//! `nullable: true`, and local `$ref`s (`#/$defs/...`); a `$ref` it cannot
//! resolve (remote, or dangling, as some MCP servers send) accepts anything. Keywords outside that
//! set are ignored, which accepts rather than refuses: the tool still checks
//! what it relies on.

mod compiled;

pub(crate) use compiled::CompiledSchema;
use serde_json::{Map, Value};
use std::cell::Cell;
use std::fmt;

/// How deep `$ref`s may nest before the schema is treated as cyclic.
const MAX_DEPTH: usize = 64;

/// Stops reporting after this many problems: the model fixes a few at a time.
const MAX_VIOLATIONS: usize = 8;

/// The most schema-against-value checks one validation may make. A cyclic
/// `$ref` under `anyOf` branches doubles the work at every level (2^64
/// checks before the depth cap: a hang, found by fuzzing); real tool
/// inputs need a few thousand.
const MAX_STEPS: usize = 200_000;

/// One place where the input breaks the schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaViolation {
    /// A JSON Pointer to the offending value (`/items/0/name`); empty for the
    /// whole input.
    pub path: String,
    /// What was expected there.
    pub message: String,
}

impl fmt::Display for SchemaViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "input"
        } else {
            &self.path
        };
        write!(f, "`{path}`: {}", self.message)
    }
}

/// Every violation found in one input (at most a handful), in document order.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", display_all(.violations))]
pub struct SchemaErrors {
    /// The violations; never empty.
    pub violations: Vec<SchemaViolation>,
}

fn display_all(violations: &[SchemaViolation]) -> String {
    violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Checks `input` against `schema`. The error's `Display` is written for the
/// model: each problem as "`/path`: what was expected, what was found".
///
/// ```
/// use agentkit_tools_core::validate_input;
/// use serde_json::json;
///
/// let schema = json!({
///     "type": "object",
///     "properties": { "count": { "type": "integer" } },
///     "required": ["count"]
/// });
/// assert!(validate_input(&schema, &json!({ "count": 3 })).is_ok());
/// let err = validate_input(&schema, &json!({ "count": "3" })).unwrap_err();
/// assert_eq!(err.to_string(), "`/count`: expected integer, got string");
/// ```
pub fn validate_input(schema: &Value, input: &Value) -> Result<(), SchemaErrors> {
    let steps = Cell::new(0);
    let mut validator = Validator {
        root: schema,
        violations: Vec::new(),
        steps: &steps,
    };
    validator.check(schema, input, &Path::Root, 0);
    if validator.violations.is_empty() {
        Ok(())
    } else {
        validator.violations.truncate(MAX_VIOLATIONS);
        Err(SchemaErrors {
            violations: validator.violations,
        })
    }
}

struct Validator<'a, 's> {
    root: &'a Value,
    violations: Vec<SchemaViolation>,
    /// Checks made so far, shared with the scratch validators of `anyOf`
    /// and friends.
    steps: &'s Cell<usize>,
}

impl<'a> Validator<'a, '_> {
    fn report(&mut self, path: &Path<'_>, message: String) {
        let mut rendered = String::new();
        path.render(&mut rendered);
        self.violations.push(SchemaViolation {
            path: rendered,
            message,
        });
    }

    /// Validates with a scratch validator, for the combinators that must know
    /// whether a branch matched without reporting its failures.
    fn matches(&self, schema: &'a Value, value: &Value, path: &Path<'_>, depth: usize) -> bool {
        self.first_failure(schema, value, path, depth).is_none()
    }

    fn first_failure(
        &self,
        schema: &'a Value,
        value: &Value,
        path: &Path<'_>,
        depth: usize,
    ) -> Option<SchemaViolation> {
        let mut scratch = Validator {
            root: self.root,
            violations: Vec::new(),
            steps: self.steps,
        };
        scratch.check(schema, value, path, depth);
        scratch.violations.into_iter().next()
    }

    fn check(&mut self, schema: &'a Value, value: &Value, path: &Path<'_>, depth: usize) {
        if self.violations.len() >= MAX_VIOLATIONS {
            return;
        }
        if depth > MAX_DEPTH {
            self.report(path, "the schema nests too deeply (cyclic $ref?)".into());
            return;
        }
        self.steps.set(self.steps.get() + 1);
        if self.steps.get() > MAX_STEPS {
            self.report(
                path,
                "the schema is too complex to check (cyclic $ref under anyOf?)".into(),
            );
            return;
        }
        let schema = match schema {
            Value::Bool(true) => return,
            Value::Bool(false) => {
                self.report(path, "no value is allowed here".into());
                return;
            }
            Value::Object(schema) => Keywords::of(schema),
            // A malformed schema constrains nothing; refusing every call to the
            // tool would not help the model.
            _ => return,
        };

        if let Some(reference) = schema.reference.and_then(Value::as_str) {
            // A reference this validator cannot follow (a remote URL, a
            // pointer into `definitions` the server forgot to send) is a fault
            // of the schema, not of the model's input: accept what cannot be
            // checked rather than fail every call of the tool. The tool still
            // checks what it relies on.
            if let Some(target) = self.resolve(reference) {
                self.check(target, value, path, depth + 1);
            } else {
                tracing::debug!(reference, "unresolvable $ref in a tool schema; not checked");
            }
        }

        if value.is_null() && schema.nullable == Some(&Value::Bool(true)) {
            return;
        }
        if let Some(expected) = schema.ty
            && !type_matches(expected, value)
        {
            self.report(
                path,
                format!(
                    "expected {}, got {}",
                    describe_type(expected),
                    type_name(value)
                ),
            );
            // Further keywords would only repeat the same mistake.
            return;
        }
        if let Some(constant) = schema.constant
            && !json_equal(constant, value)
        {
            self.report(path, format!("expected {constant}, got {}", short(value)));
        }
        if let Some(Value::Array(options)) = schema.options
            && !options.iter().any(|option| json_equal(option, value))
        {
            let options: Vec<String> = options.iter().map(Value::to_string).collect();
            self.report(
                path,
                format!(
                    "expected one of {}, got {}",
                    options.join(", "),
                    short(value)
                ),
            );
        }

        match value {
            Value::Object(object) => self.check_object(&schema, object, path, depth),
            Value::Array(items) => self.check_array(&schema, items, path, depth),
            Value::String(text) => self.check_string(&schema, text, path),
            Value::Number(_) => self.check_number(&schema, value, path),
            Value::Bool(_) | Value::Null => {}
        }

        self.check_combinators(&schema, value, path, depth);
    }

    fn check_object(
        &mut self,
        schema: &Keywords<'a>,
        object: &Map<String, Value>,
        path: &Path<'_>,
        depth: usize,
    ) {
        if let Some(Value::Array(required)) = schema.required {
            for name in required.iter().filter_map(Value::as_str) {
                if !object.contains_key(name) {
                    self.report(path, format!("missing required property `{name}`"));
                }
            }
        }
        let properties = schema.properties.and_then(Value::as_object);
        let additional = schema.additional;
        // Sorted, so reports read the same whether or not serde_json's
        // `preserve_order` feature is on somewhere in the build (without
        // it, the map iterates in order already and nothing is collected).
        let mut members: Vec<(&String, &Value)> = Vec::new();
        let members: &mut dyn Iterator<Item = (&String, &Value)> = if object.keys().is_sorted() {
            &mut object.iter()
        } else {
            members.extend(object.iter());
            members.sort_by(|a, b| a.0.cmp(b.0));
            &mut members.into_iter()
        };
        for (name, member) in members {
            let inner = Path::Member(path, name);
            match properties.and_then(|p| p.get(name)) {
                Some(property) => self.check(property, member, &inner, depth + 1),
                None => match additional {
                    Some(Value::Bool(false)) => {
                        let mut known: Vec<&str> = properties
                            .map(|p| p.keys().map(String::as_str).collect())
                            .unwrap_or_default();
                        known.sort_unstable();
                        let hint = if known.is_empty() {
                            String::from("no properties are allowed")
                        } else {
                            format!("allowed: {}", known.join(", "))
                        };
                        self.report(path, format!("unknown property `{name}` ({hint})"));
                    }
                    Some(extra @ Value::Object(_)) => self.check(extra, member, &inner, depth + 1),
                    _ => {}
                },
            }
        }
    }

    fn check_array(
        &mut self,
        schema: &Keywords<'a>,
        items: &[Value],
        path: &Path<'_>,
        depth: usize,
    ) {
        if let Some(min) = schema.min_items.and_then(Value::as_u64)
            && (items.len() as u64) < min
        {
            self.report(
                path,
                format!("expected at least {min} items, got {}", items.len()),
            );
        }
        if let Some(max) = schema.max_items.and_then(Value::as_u64)
            && (items.len() as u64) > max
        {
            self.report(
                path,
                format!("expected at most {max} items, got {}", items.len()),
            );
        }
        match schema.items {
            Some(item_schema @ (Value::Object(_) | Value::Bool(_))) => {
                for (index, item) in items.iter().enumerate() {
                    self.check(item_schema, item, &Path::Index(path, index), depth + 1);
                }
            }
            // The draft-4 tuple form: one schema per position.
            Some(Value::Array(tuple)) => {
                for (index, (item_schema, item)) in tuple.iter().zip(items).enumerate() {
                    self.check(item_schema, item, &Path::Index(path, index), depth + 1);
                }
            }
            _ => {}
        }
    }

    fn check_string(&mut self, schema: &Keywords<'_>, text: &str, path: &Path<'_>) {
        if schema.min_length.is_none() && schema.max_length.is_none() {
            return;
        }
        // JSON Schema counts characters, not bytes.
        let chars = text.chars().count() as u64;
        if let Some(min) = schema.min_length.and_then(Value::as_u64)
            && chars < min
        {
            self.report(
                path,
                format!("expected at least {min} characters, got {chars}"),
            );
        }
        if let Some(max) = schema.max_length.and_then(Value::as_u64)
            && chars > max
        {
            self.report(
                path,
                format!("expected at most {max} characters, got {chars}"),
            );
        }
    }

    fn check_number(&mut self, schema: &Keywords<'_>, value: &Value, path: &Path<'_>) {
        let Some(number) = value.as_f64() else {
            return;
        };
        let bound = |keyword: Option<&Value>| keyword.and_then(Value::as_f64);
        if let Some(min) = bound(schema.minimum)
            && number < min
        {
            self.report(path, format!("expected at least {min}, got {value}"));
        }
        if let Some(max) = bound(schema.maximum)
            && number > max
        {
            self.report(path, format!("expected at most {max}, got {value}"));
        }
        if let Some(min) = bound(schema.exclusive_minimum)
            && number <= min
        {
            self.report(path, format!("expected more than {min}, got {value}"));
        }
        if let Some(max) = bound(schema.exclusive_maximum)
            && number >= max
        {
            self.report(path, format!("expected less than {max}, got {value}"));
        }
    }

    fn check_combinators(
        &mut self,
        schema: &Keywords<'a>,
        value: &Value,
        path: &Path<'_>,
        depth: usize,
    ) {
        if let Some(Value::Array(all)) = schema.all_of {
            for sub in all {
                self.check(sub, value, path, depth + 1);
            }
        }
        if let Some(Value::Array(any)) = schema.any_of
            && !any
                .iter()
                .any(|sub| self.matches(sub, value, path, depth + 1))
        {
            let detail = self.closest_failure(any, value, path, depth);
            self.report(
                path,
                format!("matches none of the {} allowed shapes{detail}", any.len()),
            );
        }
        if let Some(Value::Array(one)) = schema.one_of {
            let matching = one
                .iter()
                .filter(|sub| self.matches(sub, value, path, depth + 1))
                .count();
            if matching == 0 {
                let detail = self.closest_failure(one, value, path, depth);
                self.report(
                    path,
                    format!("matches none of the {} allowed shapes{detail}", one.len()),
                );
            } else if matching > 1 {
                self.report(
                    path,
                    format!("matches {matching} of the allowed shapes, expected exactly one"),
                );
            }
        }
        if let Some(not) = schema.not
            && self.matches(not, value, path, depth + 1)
        {
            self.report(path, "matches a shape that is not allowed".into());
        }
    }

    /// The first branch's complaint, so the model gets one concrete hint
    /// instead of "none matched".
    fn closest_failure(
        &self,
        branches: &'a [Value],
        value: &Value,
        path: &Path<'_>,
        depth: usize,
    ) -> String {
        branches
            .iter()
            .find_map(|sub| self.first_failure(sub, value, path, depth + 1))
            .map(|violation| format!(" (first: {violation})"))
            .unwrap_or_default()
    }

    fn resolve(&self, reference: &str) -> Option<&'a Value> {
        let pointer = reference.strip_prefix('#')?;
        if pointer.is_empty() {
            return Some(self.root);
        }
        self.root.pointer(pointer)
    }
}

/// The keywords of one schema object this validator knows, found in one
/// pass over its members: looking each up in the map would search it some
/// twenty times per value checked.
#[derive(Default)]
struct Keywords<'a> {
    reference: Option<&'a Value>,
    nullable: Option<&'a Value>,
    ty: Option<&'a Value>,
    constant: Option<&'a Value>,
    options: Option<&'a Value>,
    required: Option<&'a Value>,
    properties: Option<&'a Value>,
    additional: Option<&'a Value>,
    items: Option<&'a Value>,
    min_items: Option<&'a Value>,
    max_items: Option<&'a Value>,
    min_length: Option<&'a Value>,
    max_length: Option<&'a Value>,
    minimum: Option<&'a Value>,
    maximum: Option<&'a Value>,
    exclusive_minimum: Option<&'a Value>,
    exclusive_maximum: Option<&'a Value>,
    all_of: Option<&'a Value>,
    any_of: Option<&'a Value>,
    one_of: Option<&'a Value>,
    not: Option<&'a Value>,
}

impl<'a> Keywords<'a> {
    fn of(schema: &'a Map<String, Value>) -> Self {
        let mut keywords = Self::default();
        for (key, value) in schema {
            let slot = match key.as_str() {
                "$ref" => &mut keywords.reference,
                "nullable" => &mut keywords.nullable,
                "type" => &mut keywords.ty,
                "const" => &mut keywords.constant,
                "enum" => &mut keywords.options,
                "required" => &mut keywords.required,
                "properties" => &mut keywords.properties,
                "additionalProperties" => &mut keywords.additional,
                "items" => &mut keywords.items,
                "minItems" => &mut keywords.min_items,
                "maxItems" => &mut keywords.max_items,
                "minLength" => &mut keywords.min_length,
                "maxLength" => &mut keywords.max_length,
                "minimum" => &mut keywords.minimum,
                "maximum" => &mut keywords.maximum,
                "exclusiveMinimum" => &mut keywords.exclusive_minimum,
                "exclusiveMaximum" => &mut keywords.exclusive_maximum,
                "allOf" => &mut keywords.all_of,
                "anyOf" => &mut keywords.any_of,
                "oneOf" => &mut keywords.one_of,
                "not" => &mut keywords.not,
                _ => continue,
            };
            *slot = Some(value);
        }
        keywords
    }
}

/// Where in the input the validator is: a chain of frames on the stack,
/// written out as a JSON Pointer only when a violation is reported, so a
/// valid input costs no string.
#[derive(Clone, Copy)]
enum Path<'p> {
    Root,
    Member(&'p Path<'p>, &'p str),
    Index(&'p Path<'p>, usize),
}

impl Path<'_> {
    fn render(&self, out: &mut String) {
        match self {
            Path::Root => {}
            Path::Member(parent, name) => {
                parent.render(out);
                push_pointer(out, name);
            }
            Path::Index(parent, index) => {
                parent.render(out);
                push_pointer(out, &index.to_string());
            }
        }
    }
}

/// Appends one JSON Pointer segment, escaped as RFC 6901 asks.
fn push_pointer(path: &mut String, segment: &str) {
    path.push('/');
    for c in segment.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            c => path.push(c),
        }
    }
}

fn type_matches(expected: &Value, value: &Value) -> bool {
    match expected {
        Value::String(name) => is_type(name, value),
        Value::Array(names) => names
            .iter()
            .filter_map(Value::as_str)
            .any(|name| is_type(name, value)),
        _ => true,
    }
}

fn is_type(name: &str, value: &Value) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        // 1.0 is an integer to JSON Schema: only the value counts, not how it
        // was written.
        "integer" => {
            value.is_i64()
                || value.is_u64()
                || value
                    .as_f64()
                    .is_some_and(|n| n.is_finite() && n.fract() == 0.0)
        }
        // An unknown type name constrains nothing.
        _ => true,
    }
}

fn describe_type(expected: &Value) -> String {
    match expected {
        Value::Array(names) => {
            let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
            names.join(" or ")
        }
        Value::String(name) => name.clone(),
        other => other.to_string(),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Numbers compare by value (`1` equals `1.0`), everything else structurally.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, v)| y.get(key).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// A value for an error message, cut short so a huge argument does not flood
/// the model's context.
fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= 80 {
        return text;
    }
    let mut end = 77;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(schema: Value, input: Value) -> Vec<String> {
        match validate_input(&schema, &input) {
            Ok(()) => Vec::new(),
            Err(err) => err.violations.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn type_mismatch_names_path_expected_and_found() {
        let schema = json!({
            "type": "object",
            "properties": { "count": { "type": "integer" }, "text": { "type": "string" } }
        });
        assert_eq!(
            errors(schema, json!({ "count": "3", "text": 4.5 })),
            vec![
                "`/count`: expected integer, got string",
                "`/text`: expected string, got number"
            ]
        );
    }

    #[test]
    fn the_root_is_called_input() {
        assert_eq!(
            errors(json!({ "type": "object" }), json!([1])),
            vec!["`input`: expected object, got array"]
        );
    }

    #[test]
    fn integers_accept_whole_floats_only() {
        let schema = json!({ "type": "integer" });
        assert!(errors(schema.clone(), json!(2.0)).is_empty());
        assert!(errors(schema.clone(), json!(-7)).is_empty());
        assert_eq!(
            errors(schema, json!(2.5)),
            vec!["`input`: expected integer, got number"]
        );
    }

    #[test]
    fn a_type_list_makes_a_field_nullable() {
        let schema = json!({ "type": ["string", "null"] });
        assert!(errors(schema.clone(), json!(null)).is_empty());
        assert!(errors(schema.clone(), json!("x")).is_empty());
        assert_eq!(
            errors(schema, json!(1)),
            vec!["`input`: expected string or null, got integer"]
        );
        let openapi = json!({ "type": "string", "nullable": true });
        assert!(errors(openapi.clone(), json!(null)).is_empty());
        assert_eq!(errors(openapi, json!(false)).len(), 1);
    }

    #[test]
    fn required_and_additional_properties() {
        let schema = json!({
            "type": "object",
            "properties": { "path": { "type": "string" } },
            "required": ["path"],
            "additionalProperties": false
        });
        assert_eq!(
            errors(schema, json!({ "pth": "a" })),
            vec![
                "`input`: missing required property `path`",
                "`input`: unknown property `pth` (allowed: path)"
            ]
        );
        let typed_extra = json!({ "additionalProperties": { "type": "number" } });
        assert_eq!(
            errors(typed_extra, json!({ "a": 1, "b": "x" })),
            vec!["`/b`: expected number, got string"]
        );
    }

    #[test]
    fn enum_and_const() {
        let schema = json!({ "enum": ["read", "write"] });
        assert!(errors(schema.clone(), json!("read")).is_empty());
        assert_eq!(
            errors(schema, json!("delete")),
            vec!["`input`: expected one of \"read\", \"write\", got \"delete\""]
        );
        assert!(errors(json!({ "const": 1 }), json!(1.0)).is_empty());
        assert_eq!(
            errors(json!({ "const": "v1" }), json!("v2")),
            vec!["`input`: expected \"v1\", got \"v2\""]
        );
    }

    #[test]
    fn arrays_items_and_bounds() {
        let schema = json!({
            "type": "array",
            "items": { "type": "object", "properties": { "name": { "type": "string" } } },
            "minItems": 1,
            "maxItems": 2
        });
        assert_eq!(
            errors(schema.clone(), json!([])),
            vec!["`input`: expected at least 1 items, got 0"]
        );
        assert_eq!(
            errors(schema.clone(), json!([{}, {}, {}])),
            vec!["`input`: expected at most 2 items, got 3"]
        );
        assert_eq!(
            errors(schema, json!([{ "name": "a" }, { "name": 2 }])),
            vec!["`/1/name`: expected string, got integer"]
        );
    }

    #[test]
    fn numbers_and_strings_have_bounds() {
        let schema = json!({ "type": "number", "minimum": 1, "maximum": 10 });
        assert_eq!(
            errors(schema.clone(), json!(0)),
            vec!["`input`: expected at least 1, got 0"]
        );
        assert_eq!(
            errors(schema.clone(), json!(11)),
            vec!["`input`: expected at most 10, got 11"]
        );
        assert!(errors(schema, json!(10)).is_empty());
        let exclusive = json!({ "exclusiveMinimum": 0 });
        assert_eq!(errors(exclusive, json!(0)).len(), 1);
        // Lengths count characters: "ää" is two, though four bytes.
        let text = json!({ "type": "string", "minLength": 2, "maxLength": 2 });
        assert!(errors(text.clone(), json!("ää")).is_empty());
        assert_eq!(
            errors(text, json!("ä")),
            vec!["`input`: expected at least 2 characters, got 1"]
        );
    }

    #[test]
    fn any_of_one_of_all_of_and_not() {
        let any = json!({ "anyOf": [{ "type": "string" }, { "type": "integer" }] });
        assert!(errors(any.clone(), json!(3)).is_empty());
        assert_eq!(
            errors(any, json!(true)),
            vec![
                "`input`: matches none of the 2 allowed shapes (first: `input`: expected string, got boolean)"
            ]
        );
        let one = json!({ "oneOf": [{ "type": "number" }, { "type": "integer" }] });
        assert!(errors(one.clone(), json!(1.5)).is_empty());
        assert_eq!(
            errors(one, json!(1)),
            vec!["`input`: matches 2 of the allowed shapes, expected exactly one"]
        );
        let all = json!({ "allOf": [{ "minimum": 0 }, { "maximum": 5 }] });
        assert_eq!(
            errors(all, json!(6)),
            vec!["`input`: expected at most 5, got 6"]
        );
        let not = json!({ "not": { "type": "null" } });
        assert_eq!(errors(not, json!(null)).len(), 1);
    }

    #[test]
    fn local_refs_resolve_and_cycles_stop() {
        let schema = json!({
            "$defs": { "name": { "type": "string" } },
            "properties": { "who": { "$ref": "#/$defs/name" } }
        });
        assert_eq!(
            errors(schema, json!({ "who": 1 })),
            vec!["`/who`: expected string, got integer"]
        );
        let cyclic = json!({ "$ref": "#" });
        assert_eq!(errors(cyclic, json!(1)).len(), 1);
    }

    #[test]
    fn a_branching_cycle_is_refused_in_bounded_time() {
        // Found by the `schema` fuzz target: two branches per level and a
        // cycle meant 2^64 checks before the depth cap, a hang per call.
        let schema = json!({
            "$defs": { "a": { "anyOf": [{ "$ref": "#/$defs/a" }, { "$ref": "#/$defs/a" }] } },
            "$ref": "#/$defs/a"
        });
        let started = std::time::Instant::now();
        let found = errors(schema, json!(1));
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("too complex") || found[0].contains("shapes"),
            "{found:?}"
        );
    }

    #[test]
    fn unresolvable_refs_accept_what_they_cannot_check() {
        // MCP servers send these; refusing every call would make the tool
        // unusable. The rest of the schema is still checked.
        let schema = json!({
            "type": "object",
            "properties": {
                "a": { "$ref": "#/$defs/nope" },
                "b": { "$ref": "https://example.com/schema.json" },
                "c": { "$ref": "#/definitions/Missing", "type": "string" }
            },
            "required": ["a"]
        });
        assert!(errors(schema.clone(), json!({ "a": 1, "b": [true], "c": "x" })).is_empty());
        assert_eq!(
            errors(schema.clone(), json!({ "a": 1, "c": 2 })),
            vec!["`/c`: expected string, got integer"]
        );
        assert_eq!(
            errors(schema, json!({})),
            vec!["`input`: missing required property `a`"]
        );
    }

    #[test]
    fn pointer_segments_are_escaped() {
        let schema = json!({ "properties": { "a/b": { "type": "string" } } });
        assert_eq!(
            errors(schema, json!({ "a/b": 1 })),
            vec!["`/a~1b`: expected string, got integer"]
        );
    }

    #[test]
    fn permissive_schemas_accept_anything() {
        assert!(errors(json!({}), json!({ "x": [1, 2] })).is_empty());
        assert!(errors(json!(true), json!(null)).is_empty());
        assert_eq!(errors(json!(false), json!(null)).len(), 1);
    }

    #[test]
    fn huge_values_are_shortened_in_messages() {
        let long = "é".repeat(200);
        let message = errors(json!({ "const": "x" }), json!(long)).remove(0);
        assert!(message.len() < 120, "{message}");
        assert!(message.ends_with("..."), "{message}");
    }

    #[test]
    fn reporting_stops_after_a_handful() {
        let schema = json!({ "items": { "type": "string" } });
        let input = Value::Array((0..50).map(Value::from).collect());
        assert_eq!(
            validate_input(&schema, &input)
                .unwrap_err()
                .violations
                .len(),
            MAX_VIOLATIONS
        );
    }
}
