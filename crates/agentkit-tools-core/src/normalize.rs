//! Reshaping a tool's JSON Schema for what one provider accepts.
//!
//! Every provider takes "JSON Schema", and each means a different part of
//! it. OpenAI's strict mode wants every object closed
//! (`additionalProperties: false`) with every property required (optional
//! ones become nullable) and no `oneOf`; Anthropic and OpenAI refuse
//! combinators at the root; Gemini takes an OpenAPI 3.0 subset (one `type`
//! plus `nullable`, no `$ref`, no `additionalProperties`, no `const`). One
//! function, [`normalize_for`], produces each shape from the schema a tool
//! declares. The spec keeps the original, and the executor validates calls
//! against the original, so keywords dropped here still hold.
//!
//! Common to every dialect: local `$ref`s are inlined (a reference that
//! cannot be resolved becomes `{}`, "anything"; a recursive one is inlined
//! a few levels deep and then becomes `{}`), `$schema`/`$id`/`$defs` are
//! dropped, and the root is an object with `properties`.

use serde_json::{Map, Value, json};

/// How deep `$ref`s are inlined before the rest is left open (`{}`).
const MAX_INLINE_DEPTH: usize = 8;

/// The schema dialect of one provider API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SchemaDialect {
    /// OpenAI function calling without `strict` (Chat Completions and
    /// compatible servers): JSON Schema, root an object without
    /// combinators.
    OpenAi,
    /// OpenAI with `strict: true`: closed objects, every property required
    /// (optional ones nullable), `anyOf` instead of `oneOf`, and only the
    /// keywords strict mode supports.
    OpenAiStrict,
    /// Anthropic's Messages API: JSON Schema, root an object without
    /// combinators.
    Anthropic,
    /// Gemini-style validators (OpenAPI 3.0 subset).
    Gemini,
}

/// Keywords strict mode refuses or ignores (kept in the original schema,
/// where the executor's validator checks them).
const OPENAI_STRICT_DROPPED: &[&str] = &[
    "default",
    "examples",
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
    "patternProperties",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contains",
    "minContains",
    "maxContains",
    "uniqueItems",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "not",
];

/// String formats OpenAI's strict mode accepts.
const OPENAI_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// The keywords Gemini's OpenAPI subset accepts; the rest are dropped.
const GEMINI_KEYWORDS: &[&str] = &[
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "properties",
    "required",
    "items",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "anyOf",
    "propertyOrdering",
    "title",
];

/// `schema` reshaped for `dialect`; see the module docs. The input is not
/// changed.
///
/// ```
/// use agentkit_tools_core::{SchemaDialect, normalize_for};
/// use serde_json::json;
///
/// let schema = json!({
///     "type": "object",
///     "properties": { "path": { "type": "string" }, "limit": { "type": "integer" } },
///     "required": ["path"]
/// });
/// let strict = normalize_for(SchemaDialect::OpenAiStrict, &schema);
/// assert_eq!(strict["additionalProperties"], false);
/// assert_eq!(strict["required"].as_array().unwrap().len(), 2);
/// assert_eq!(strict["properties"]["limit"]["type"], json!(["integer", "null"]));
/// ```
pub fn normalize_for(dialect: SchemaDialect, schema: &Value) -> Value {
    let mut out = inline_refs(schema, schema, 0);
    flatten_root(&mut out);
    let mut out = rewrite(dialect, out);
    if let Some(root) = out.as_object_mut() {
        root.insert("type".into(), Value::from("object"));
        root.entry("properties").or_insert_with(|| json!({}));
        if dialect == SchemaDialect::OpenAiStrict {
            root.entry("required").or_insert_with(|| json!([]));
        }
    }
    out
}

/// Replaces every local `$ref` with its target.
fn inline_refs(node: &Value, root: &Value, depth: usize) -> Value {
    match node {
        Value::Object(map) => {
            if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
                let target = reference
                    .strip_prefix('#')
                    .and_then(|pointer| {
                        if pointer.is_empty() {
                            Some(root)
                        } else {
                            root.pointer(pointer)
                        }
                    })
                    .filter(|_| depth < MAX_INLINE_DEPTH);
                let mut inlined = match target {
                    Some(target) => inline_refs(target, root, depth + 1),
                    None => json!({}),
                };
                // Siblings of `$ref` (a description) refine the target.
                if let Value::Object(inlined_map) = &mut inlined {
                    for (key, value) in map {
                        if key != "$ref" {
                            inlined_map.insert(key.clone(), inline_refs(value, root, depth));
                        }
                    }
                }
                return inlined;
            }
            let mut out = Map::new();
            for (key, value) in map {
                if matches!(key.as_str(), "$defs" | "definitions" | "$schema" | "$id") {
                    continue;
                }
                out.insert(key.clone(), inline_refs(value, root, depth));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| inline_refs(item, root, depth))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Providers want an object at the root, not `anyOf`/`oneOf`/`allOf`: the
/// branches' properties are merged (required only if required by every
/// branch, or by an `allOf` part).
fn flatten_root(schema: &mut Value) {
    let Some(root) = schema.as_object_mut() else {
        *schema = json!({ "type": "object", "properties": {} });
        return;
    };
    let mut properties = root
        .remove("properties")
        .and_then(|p| p.as_object().cloned())
        .unwrap_or_default();
    let mut required: Vec<Value> = root
        .remove("required")
        .and_then(|r| r.as_array().cloned())
        .unwrap_or_default();
    for (keyword, all_required) in [("allOf", true), ("anyOf", false), ("oneOf", false)] {
        let Some(Value::Array(branches)) = root.remove(keyword) else {
            continue;
        };
        let mut common: Option<Vec<Value>> = None;
        for branch in &branches {
            if let Some(props) = branch.get("properties").and_then(Value::as_object) {
                for (name, prop) in props {
                    properties
                        .entry(name.clone())
                        .or_insert_with(|| prop.clone());
                }
            }
            let branch_required: Vec<Value> = branch
                .get("required")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if all_required {
                required.extend(branch_required);
            } else {
                common = Some(match common {
                    None => branch_required,
                    Some(prev) => prev
                        .into_iter()
                        .filter(|r| branch_required.contains(r))
                        .collect(),
                });
            }
        }
        required.extend(common.unwrap_or_default());
    }
    let mut seen = Vec::new();
    required.retain(|r| {
        let fresh = !seen.contains(r);
        seen.push(r.clone());
        fresh
    });
    root.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        root.insert("required".into(), Value::Array(required));
    }
}

/// Applies the dialect's rules to every subschema, bottom up.
fn rewrite(dialect: SchemaDialect, node: Value) -> Value {
    let Value::Object(map) = node else {
        // `true`/`false` schemas: providers want objects.
        return match node {
            Value::Bool(_) => json!({}),
            other => other,
        };
    };
    let mut map: Map<String, Value> = map
        .into_iter()
        .map(|(key, value)| {
            let value = match key.as_str() {
                "properties" => match value {
                    Value::Object(props) => Value::Object(
                        props
                            .into_iter()
                            .map(|(name, prop)| (name, rewrite(dialect, prop)))
                            .collect(),
                    ),
                    other => other,
                },
                "items" | "additionalProperties" | "not" if value.is_object() => {
                    rewrite(dialect, value)
                }
                "anyOf" | "oneOf" | "allOf" | "prefixItems" => match value {
                    Value::Array(branches) => Value::Array(
                        branches
                            .into_iter()
                            .map(|branch| rewrite(dialect, branch))
                            .collect(),
                    ),
                    other => other,
                },
                _ => value,
            };
            (key, value)
        })
        .collect();
    match dialect {
        SchemaDialect::OpenAi | SchemaDialect::Anthropic => {}
        SchemaDialect::OpenAiStrict => strict(&mut map),
        SchemaDialect::Gemini => gemini(&mut map),
    }
    Value::Object(map)
}

fn strict(map: &mut Map<String, Value>) {
    for keyword in OPENAI_STRICT_DROPPED {
        map.remove(*keyword);
    }
    if let Some(one_of) = map.remove("oneOf") {
        map.insert("anyOf".into(), one_of);
    }
    if let Some(Value::Array(mut all_of)) = map.remove("allOf") {
        if all_of.len() == 1 {
            if let Value::Object(only) = all_of.remove(0) {
                for (key, value) in only {
                    map.entry(key).or_insert(value);
                }
            }
        } else {
            map.insert("allOf".into(), Value::Array(all_of));
        }
    }
    if let Some(format) = map.get("format").and_then(Value::as_str)
        && !OPENAI_FORMATS.contains(&format)
    {
        map.remove("format");
    }
    let is_object = map.contains_key("properties")
        || map.get("type").is_some_and(|t| type_includes(t, "object"));
    if !is_object {
        return;
    }
    map.insert("additionalProperties".into(), Value::Bool(false));
    let required: Vec<String> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let Some(Value::Object(properties)) = map.get_mut("properties") else {
        map.insert("properties".into(), json!({}));
        map.insert("required".into(), json!([]));
        return;
    };
    let mut all = Vec::new();
    for (name, prop) in properties.iter_mut() {
        if !required.contains(name) {
            make_nullable(prop);
        }
        all.push(Value::from(name.clone()));
    }
    map.insert("required".into(), Value::Array(all));
}

/// An optional property as strict mode spells it: required, but `null`
/// allowed.
fn make_nullable(prop: &mut Value) {
    let Value::Object(map) = prop else {
        return;
    };
    match map.get_mut("type") {
        Some(Value::String(name)) if name != "null" => {
            let name = std::mem::take(name);
            map.insert("type".into(), json!([name, "null"]));
            if let Some(Value::Array(options)) = map.get_mut("enum")
                && !options.contains(&Value::Null)
            {
                options.push(Value::Null);
            }
        }
        Some(Value::Array(names)) => {
            if !names.contains(&Value::from("null")) {
                names.push(Value::from("null"));
            }
        }
        _ => {
            if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
                if !branches
                    .iter()
                    .any(|b| b.get("type") == Some(&json!("null")))
                {
                    branches.push(json!({ "type": "null" }));
                }
            } else if !map.is_empty() {
                let inner = Value::Object(std::mem::take(map));
                map.insert("anyOf".into(), json!([inner, { "type": "null" }]));
            }
        }
    }
}

fn gemini(map: &mut Map<String, Value>) {
    if let Some(constant) = map.remove("const") {
        map.entry("enum").or_insert_with(|| json!([constant]));
    }
    if let Some(one_of) = map.remove("oneOf") {
        map.entry("anyOf").or_insert(one_of);
    }
    if let Some(Value::Number(min)) = map.remove("exclusiveMinimum") {
        map.entry("minimum").or_insert(Value::Number(min));
    }
    if let Some(Value::Number(max)) = map.remove("exclusiveMaximum") {
        map.entry("maximum").or_insert(Value::Number(max));
    }
    // One type plus `nullable`, as OpenAPI 3.0 says it.
    if let Some(Value::Array(names)) = map.get("type").cloned() {
        let nullable = names.contains(&Value::from("null"));
        let rest: Vec<Value> = names.into_iter().filter(|n| n != "null").collect();
        match rest.as_slice() {
            [one] => {
                map.insert("type".into(), one.clone());
            }
            [] => {
                map.remove("type");
            }
            many => {
                map.remove("type");
                let branches: Vec<Value> = many.iter().map(|t| json!({ "type": t })).collect();
                map.insert("anyOf".into(), Value::Array(branches));
            }
        }
        if nullable {
            map.insert("nullable".into(), Value::Bool(true));
        }
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        let before = branches.len();
        branches.retain(|b| b.get("type") != Some(&json!("null")));
        if branches.len() < before {
            map.insert("nullable".into(), Value::Bool(true));
        }
        if let Some(Value::Array(branches)) = map.get("anyOf")
            && branches.len() == 1
            && let Some(Value::Object(only)) = map
                .remove("anyOf")
                .and_then(|b| b.as_array().and_then(|b| b.first().cloned()))
        {
            for (key, value) in only {
                map.entry(key).or_insert(value);
            }
        }
    }
    if let Some(format) = map.get("format").and_then(Value::as_str) {
        let kept = match map.get("type").and_then(Value::as_str) {
            Some("string") => matches!(format, "enum" | "date-time"),
            Some("integer") => matches!(format, "int32" | "int64"),
            Some("number") => matches!(format, "float" | "double"),
            _ => false,
        };
        if !kept {
            map.remove("format");
        }
    }
    map.retain(|key, _| GEMINI_KEYWORDS.contains(&key.as_str()));
}

fn type_includes(types: &Value, name: &str) -> bool {
    match types {
        Value::String(t) => t == name,
        Value::Array(ts) => ts.iter().any(|t| t == name),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "path": { "type": "string", "minLength": 1, "format": "uint8" },
                "mode": { "$ref": "#/$defs/Mode", "description": "How." },
                "limit": { "type": "integer", "format": "uint32", "minimum": 0 },
                "tags": { "type": "array", "items": { "type": "object", "properties": { "k": { "type": "string" } } } },
                "level": { "const": "x" },
                "maybe": { "type": ["string", "null"] },
                "missing": { "$ref": "#/$defs/Nope" }
            },
            "required": ["path", "mode"],
            "$defs": { "Mode": { "type": "string", "enum": ["a", "b"] } }
        })
    }

    #[test]
    fn refs_are_inlined_and_unknown_refs_left_open_everywhere() {
        for dialect in [
            SchemaDialect::OpenAi,
            SchemaDialect::OpenAiStrict,
            SchemaDialect::Anthropic,
            SchemaDialect::Gemini,
        ] {
            let out = normalize_for(dialect, &sample());
            let text = out.to_string();
            assert!(
                !text.contains("$ref") && !text.contains("$defs"),
                "{dialect:?}: {text}"
            );
            assert!(!text.contains("$schema"), "{dialect:?}");
            assert_eq!(out["properties"]["mode"]["description"], "How.");
            assert_eq!(out["type"], "object");
        }
    }

    #[test]
    fn openai_strict_closes_objects_and_requires_everything() {
        let out = normalize_for(SchemaDialect::OpenAiStrict, &sample());
        assert_eq!(out["additionalProperties"], false);
        let mut required: Vec<&str> = out["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        required.sort_unstable();
        assert_eq!(
            required,
            ["level", "limit", "maybe", "missing", "mode", "path", "tags"]
        );
        // Optional became nullable; required stayed as they were.
        assert_eq!(
            out["properties"]["limit"]["type"],
            json!(["integer", "null"])
        );
        assert_eq!(out["properties"]["mode"]["type"], "string");
        assert_eq!(out["properties"]["tags"]["type"], json!(["array", "null"]));
        assert_eq!(
            out["properties"]["maybe"]["type"],
            json!(["string", "null"])
        );
        // Nested objects are closed too.
        let nested = &out["properties"]["tags"]["items"];
        assert_eq!(nested["additionalProperties"], false);
        assert_eq!(nested["required"], json!(["k"]));
        // Unsupported keywords and formats are gone.
        assert!(out["properties"]["path"].get("minLength").is_none());
        assert!(out["properties"]["path"].get("format").is_none());
        // A schema with no type gets anyOf-null.
        assert_eq!(
            out["properties"]["level"]["anyOf"][1],
            json!({ "type": "null" })
        );
    }

    #[test]
    fn gemini_gets_the_openapi_subset() {
        let out = normalize_for(SchemaDialect::Gemini, &sample());
        assert_eq!(
            out["properties"]["maybe"],
            json!({ "type": "string", "nullable": true })
        );
        assert_eq!(out["properties"]["level"], json!({ "enum": ["x"] }));
        assert!(out["properties"]["limit"].get("format").is_none());
        assert!(out.get("additionalProperties").is_none());
        let text = out.to_string();
        assert!(!text.contains("const") && !text.contains("additionalProperties"));
    }

    #[test]
    fn root_combinators_are_merged_into_one_object() {
        let tagged = json!({
            "oneOf": [
                { "type": "object", "properties": { "kind": { "const": "a" }, "x": { "type": "string" } }, "required": ["kind", "x"] },
                { "type": "object", "properties": { "kind": { "const": "b" }, "y": { "type": "integer" } }, "required": ["kind"] }
            ]
        });
        for dialect in [SchemaDialect::OpenAi, SchemaDialect::Anthropic] {
            let out = normalize_for(dialect, &tagged);
            assert!(out.get("oneOf").is_none());
            assert_eq!(out["type"], "object");
            assert_eq!(out["required"], json!(["kind"]));
            let names: Vec<&String> = out["properties"].as_object().unwrap().keys().collect();
            assert_eq!(names.len(), 3);
        }
        let empty = normalize_for(SchemaDialect::OpenAiStrict, &json!(true));
        assert_eq!(
            empty,
            json!({ "type": "object", "properties": {}, "required": [], "additionalProperties": false })
        );
    }

    #[test]
    fn recursive_refs_stop() {
        let recursive = json!({
            "type": "object",
            "properties": { "child": { "$ref": "#" } }
        });
        let out = normalize_for(SchemaDialect::Anthropic, &recursive);
        assert!(!out.to_string().contains("$ref"));
    }
}
