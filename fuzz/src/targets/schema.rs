//! `schema`: the tool-argument JSON Schema validator.
//!
//! Inputs are JSON documents `{"schema", "value", "wrong_at"}`. Schemas are
//! generated together with a value that conforms to them (objects with
//! required and optional properties, arrays with length bounds, strings
//! with length bounds, bounded integers, enums, constants, nullable types,
//! `anyOf`, `allOf`, local `$ref`s); with `wrong_at` set, the leaf at that
//! JSON Pointer was replaced by a value of the wrong type. Properties: a
//! conforming value is accepted; a broken one is refused with a violation
//! at exactly that path; whatever the document (arbitrary JSON, cyclic
//! `$ref`s), validation ends with at most eight violations and never
//! panics.

use crate::{Outcome, Target, mutated};
use agentkit_tools_core::validate_input;
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use serde_json::{Map, Value, json};

/// The target.
pub const TARGET: Target = Target {
    name: "schema",
    about: "schema validator: generated values accepted, one broken leaf refused at its path",
    check,
    generate,
};

const ODD: &[&[u8]] = &[
    br##"{"schema":{"$ref":"#"},"value":1}"##,
    br##"{"schema":{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"anyOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"},"value":[1]}"##,
    br#"{"schema":{"type":"object","additionalProperties":{"type":"string"},"minProperties":1},"value":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10}}"#,
    br#"{"schema":{"type":["integer","null"],"minimum":1e400,"multipleOf":0},"value":1.5e308}"#,
    br#"{"schema":{"items":[{"type":"string"}],"oneOf":[{},{}],"not":{"not":{}}},"value":["\u0000"]}"#,
];

/// A schema and a value it accepts.
fn schema_and_value() -> impl Strategy<Value = (Value, Value)> {
    let leaf = prop_oneof![
        (0usize..4, 0usize..6, "[a-zé🌍]{0,8}").prop_map(|(min, extra, s)| {
            let len = s.chars().count();
            let (min, max) = (min.min(len), len + extra);
            (
                json!({"type": "string", "minLength": min, "maxLength": max}),
                json!(s),
            )
        }),
        (-50i64..50, 0i64..50).prop_map(|(min, span)| {
            (
                json!({"type": "integer", "minimum": min, "maximum": min + span}),
                json!(min + span / 2),
            )
        }),
        any::<bool>().prop_map(|b| (json!({"type": "boolean"}), json!(b))),
        (-1e6f64..1e6).prop_map(|n| (json!({"type": "number", "exclusiveMaximum": 1e7}), json!(n))),
        (0usize..3).prop_map(|i| {
            let options = [json!("a"), json!(2), json!(null)];
            (json!({"enum": options}), options[i].clone())
        }),
        Just((json!({"const": {"k": [1, "x"]}}), json!({"k": [1, "x"]}))),
        Just((json!({"type": ["string", "null"]}), Value::Null)),
        Just((json!({"type": "string", "nullable": true}), Value::Null)),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            // An object: every property present when required, some when not.
            proptest::collection::vec((inner.clone(), any::<bool>(), any::<bool>()), 1..4).prop_map(
                |fields| {
                    let mut properties = Map::new();
                    let mut value = Map::new();
                    let mut required = Vec::new();
                    for (i, ((schema, v), is_required, present)) in fields.into_iter().enumerate() {
                        let name = format!("f{i}");
                        properties.insert(name.clone(), schema);
                        if is_required {
                            required.push(json!(name));
                        }
                        if is_required || present {
                            value.insert(name, v);
                        }
                    }
                    (
                        json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false}),
                        Value::Object(value),
                    )
                }
            ),
            // An array of one item schema's values, within its bounds.
            (inner.clone(), 0usize..4).prop_map(|((schema, v), n)| {
                (
                    json!({"type": "array", "items": schema, "minItems": n, "maxItems": n + 1}),
                    Value::Array(vec![v; n]),
                )
            }),
            (inner.clone(), inner.clone(), any::<bool>()).prop_map(|((s1, v1), (s2, v2), first)| {
                (json!({"anyOf": [s1, s2]}), if first { v1 } else { v2 })
            }),
            inner.clone().prop_map(|(s, v)| (json!({"allOf": [s, {}]}), v)),
            // `$ref`s resolve against the document root, so each level
            // needs its own name (from the content: nested levels differ).
            inner.prop_map(|(s, v)| {
                let name = format!("d{:x}", crate::fnv(s.to_string().as_bytes()));
                (json!({"$defs": {&name: s}, "$ref": format!("#/$defs/{name}")}), v)
            }),
        ]
    })
}

/// JSON Pointers of leaves whose schema is a single plain type, where a
/// value of another type must be refused right there.
fn plain_leaves(schema: &Value, value: &Value, path: String, out: &mut Vec<(String, Value)>) {
    match (schema.get("type").and_then(Value::as_str), value) {
        (Some("object"), Value::Object(fields)) => {
            for (name, v) in fields {
                if let Some(s) = schema.pointer(&format!("/properties/{name}")) {
                    plain_leaves(s, v, format!("{path}/{name}"), out);
                }
            }
        }
        (Some("array"), Value::Array(items)) => {
            if let Some(s) = schema.get("items") {
                for (i, v) in items.iter().enumerate() {
                    plain_leaves(s, v, format!("{path}/{i}"), out);
                }
            }
        }
        (Some("string"), _) if schema.get("nullable").is_none() => out.push((path, json!(7))),
        (Some("integer" | "boolean" | "number"), _) => out.push((path, json!("seven"))),
        _ => {}
    }
}

fn generate() -> BoxedStrategy<Vec<u8>> {
    let generated = (
        schema_and_value(),
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(|((schema, mut value), pick, break_it)| {
            let mut leaves = Vec::new();
            plain_leaves(&schema, &value, String::new(), &mut leaves);
            let mut wrong_at = Value::Null;
            if break_it && !leaves.is_empty() {
                let (path, wrong) = leaves.swap_remove(pick.index(leaves.len()));
                if path.is_empty() {
                    value = wrong;
                } else if let Some(slot) = value.pointer_mut(&path) {
                    *slot = wrong;
                }
                wrong_at = json!(path);
            }
            serde_json::to_vec(&json!({"schema": schema, "value": value, "wrong_at": wrong_at}))
                .unwrap_or_default()
        });
    prop_oneof![4 => generated, 1 => mutated(ODD)].boxed()
}

fn check(input: &[u8]) -> Outcome {
    let Ok(doc) = serde_json::from_slice::<Value>(input) else {
        return Ok(());
    };
    let schema = doc.get("schema").unwrap_or(&Value::Null);
    let value = doc.get("value").unwrap_or(&Value::Null);
    let result = validate_input(schema, value);
    if let Err(errors) = &result
        && (errors.violations.is_empty() || errors.violations.len() > 8)
    {
        return Err(format!("{} violations reported", errors.violations.len()));
    }
    match (doc.get("wrong_at"), &result) {
        (Some(Value::Null), Err(errors)) => Err(format!("conforming value refused: {errors}")),
        (Some(Value::String(path)), Ok(())) => Err(format!("wrong type at {path:?} accepted")),
        (Some(Value::String(path)), Err(errors)) => {
            if errors.violations.iter().any(|v| &v.path == path) {
                Ok(())
            } else {
                Err(format!(
                    "wrong type at {path:?}, but the violations are {errors}"
                ))
            }
        }
        _ => Ok(()),
    }
}
