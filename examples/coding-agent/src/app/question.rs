//! A tool's question (an MCP server's elicitation) asked in the terminal.
//!
//! A form question arrives as a flat JSON schema of primitive fields. The
//! user fills it in one field at a time, as a prompt per field: its name,
//! description, type and default are shown, Enter takes the default (or
//! leaves an optional field out), a choice shows its options (by number,
//! value or title), and a value that does not fit is refused with the
//! reason before the next field is asked (its type, choices, bounds and
//! format, with [`agentkit_tools_core::check_field`]). The loop checks the
//! whole answer against the schema again and fills in the defaults
//! ([`agentkit_tools_core::complete_form`]); a form it refuses is shown
//! with the reason and asked again.
//!
//! The parsing lives apart from the keys so it can be tested without a
//! terminal.

use super::Ctx;
use crate::input::{InputEvent, Mode};
use crate::screen::{Line, Look};
use agentkit_loop::{InvalidStateReason, LoopError, ModelSession, PendingQuestion};
use agentkit_store::Session;
use agentkit_tools_core::QuestionKind;
use serde_json::{Map, Value};

/// One field of a form question.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Field {
    /// The property's key.
    pub(crate) name: String,
    /// Its title and description, joined, for display.
    pub(crate) about: String,
    pub(crate) kind: Kind,
    pub(crate) default: Option<Value>,
    pub(crate) required: bool,
    /// The property's schema, for its bounds and format.
    pub(crate) schema: Value,
}

/// What a field takes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Kind {
    Text,
    Number,
    Integer,
    Boolean,
    /// One of the options: `(value, title)`.
    Choice(Vec<(Value, String)>),
    /// Several of the options, comma-separated.
    Choices(Vec<(Value, String)>),
    /// A type the terminal does not know: read as text.
    Other(String),
}

/// The fields of `schema`, in its order.
pub(crate) fn fields(schema: &Value) -> Vec<Field> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let text = |key: &str| property.get(key).and_then(Value::as_str);
            let about = match (text("title"), text("description")) {
                (Some(title), Some(description)) => format!("{title}: {description}"),
                (Some(one), None) | (None, Some(one)) => one.to_owned(),
                (None, None) => String::new(),
            };
            Field {
                name: name.clone(),
                about,
                kind: kind(property),
                default: property.get("default").cloned(),
                required: required.contains(&name.as_str()),
                schema: property.clone(),
            }
        })
        .collect()
}

fn kind(property: &Value) -> Kind {
    let items = property.get("items").unwrap_or(&Value::Null);
    match property.get("type").and_then(Value::as_str) {
        Some("array") => match options(items) {
            Some(options) => Kind::Choices(options),
            None => Kind::Other("array".into()),
        },
        _ if options(property).is_some() => Kind::Choice(options(property).unwrap_or_default()),
        Some("string") | None => Kind::Text,
        Some("number") => Kind::Number,
        Some("integer") => Kind::Integer,
        Some("boolean") => Kind::Boolean,
        Some(other) => Kind::Other(other.to_owned()),
    }
}

/// The options of a choice: `oneOf` / `anyOf` constants with their titles,
/// or `enum` values (titled by a legacy `enumNames` when given).
fn options(schema: &Value) -> Option<Vec<(Value, String)>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names = schema.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .map(|(i, value)| {
                    let title = names
                        .and_then(|names| names.get(i))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .unwrap_or_else(|| show(value));
                    (value.clone(), title)
                })
                .collect(),
        );
    }
    ["oneOf", "anyOf"].iter().find_map(|key| {
        let list = schema.get(*key).and_then(Value::as_array)?;
        Some(
            list.iter()
                .filter_map(|option| {
                    let value = option.get("const")?.clone();
                    let title = option
                        .get("title")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .unwrap_or_else(|| show(&value));
                    Some((value, title))
                })
                .collect(),
        )
    })
}

/// A value as the user would type it (strings without quotes).
pub(crate) fn show(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(items) => items.iter().map(show).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

impl Field {
    /// The type in words: `integer`, `yes/no`, `one of 3`, ...
    pub(crate) fn type_name(&self) -> String {
        match &self.kind {
            Kind::Text => "text".into(),
            Kind::Number => "number".into(),
            Kind::Integer => "integer".into(),
            Kind::Boolean => "yes/no".into(),
            Kind::Choice(options) => format!("one of {}", options.len()),
            Kind::Choices(options) => format!("any of {}, comma-separated", options.len()),
            Kind::Other(name) => name.clone(),
        }
    }

    /// The options, numbered, for display (`1) Monica  2) Rachel`).
    pub(crate) fn option_list(&self) -> Option<String> {
        let (Kind::Choice(options) | Kind::Choices(options)) = &self.kind else {
            return None;
        };
        let shown: Vec<String> = options
            .iter()
            .enumerate()
            .map(|(i, (value, title))| {
                let value = show(value);
                if value == *title {
                    format!("{}) {title}", i + 1)
                } else {
                    format!("{}) {title} ({value})", i + 1)
                }
            })
            .collect();
        Some(shown.join("  "))
    }

    /// Reads what the user typed: `Ok(None)` leaves the field out (the
    /// schema's default, if any, is filled in later); `Err` says why the
    /// text does not fit.
    pub(crate) fn read(&self, text: &str) -> Result<Option<Value>, String> {
        let text = text.trim();
        if text.is_empty() {
            return if self.required && self.default.is_none() {
                Err("this field is required".into())
            } else {
                Ok(None)
            };
        }
        let value = match &self.kind {
            Kind::Text | Kind::Other(_) => Value::String(text.to_owned()),
            Kind::Number => {
                let number: f64 = text
                    .parse()
                    .map_err(|_| format!("{text:?} is not a number"))?;
                serde_json::Number::from_f64(number)
                    .map(Value::Number)
                    .ok_or_else(|| format!("{text:?} is not a finite number"))?
            }
            Kind::Integer => Value::from(
                text.parse::<i64>()
                    .map_err(|_| format!("{text:?} is not a whole number"))?,
            ),
            Kind::Boolean => match text.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Value::Bool(true),
                "n" | "no" | "false" => Value::Bool(false),
                _ => return Err(format!("{text:?}: answer yes or no")),
            },
            Kind::Choice(options) => pick(options, text)?,
            Kind::Choices(options) => Value::Array(
                text.split(',')
                    .map(|part| pick(options, part.trim()))
                    .collect::<Result<_, _>>()?,
            ),
        };
        // The schema's bounds and format, as the loop checks them.
        agentkit_tools_core::check_field(&self.name, &self.schema, &value)
            .map_err(|refused| refused.to_string())?;
        Ok(Some(value))
    }
}

/// The option `text` names: its number, value or title.
fn pick(options: &[(Value, String)], text: &str) -> Result<Value, String> {
    if let Ok(n) = text.parse::<usize>()
        && let Some((value, _)) = n.checked_sub(1).and_then(|i| options.get(i))
    {
        return Ok(value.clone());
    }
    options
        .iter()
        .find(|(value, title)| show(value) == text || title.eq_ignore_ascii_case(text))
        .map(|(value, _)| value.clone())
        .ok_or_else(|| format!("{text:?} is not one of the choices"))
}

/// How the user answered a form or a URL.
enum Reply {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

impl Ctx {
    /// Shows `pending`'s question, reads the answer and gives it to the
    /// loop. A form the loop refuses (its schema check) is shown with the
    /// reason and asked again.
    pub(super) async fn answer_question<S: ModelSession>(
        &mut self,
        driver: &mut Session<S>,
        pending: PendingQuestion,
    ) -> Result<(), LoopError> {
        let question = &pending.question;
        let who = if question.source.is_empty() {
            format!("the tool {}", pending.call.name)
        } else {
            format!("MCP server {}", question.source)
        };
        self.screen().lines(&[
            Line::new("? ", Look::Warn).and(format!("{who} asks: "), Look::Bold),
            Line::new(format!("  {}", question.message), Look::Plain),
        ]);
        loop {
            let reply = match &question.kind {
                QuestionKind::Form { schema } => {
                    self.note(
                        "  (Enter takes the default or leaves a field out; Esc declines, \
                         Ctrl-C cancels)",
                        Look::Dim,
                    );
                    self.fill_form(&fields(schema)).await
                }
                QuestionKind::Url { url, .. } => self.visit(url).await,
                // A kind this terminal cannot show.
                _ => Reply::Decline,
            };
            let (shown, result) = match reply {
                Reply::Accept(content) => ("sent", pending.clone().accept(driver, content)),
                Reply::Decline => ("declined", pending.clone().decline(driver)),
                Reply::Cancel => ("cancelled", pending.clone().cancel(driver)),
            };
            match result {
                Err(LoopError::InvalidState(InvalidStateReason::InvalidAnswer {
                    error, ..
                })) => {
                    self.note(
                        format!("  not sent: {error}; please answer again"),
                        Look::Bad,
                    );
                }
                other => {
                    self.note(format!("  you: {shown}"), Look::Dim);
                    self.screen().set_prompt(Line::new("steer> ", Look::Dim));
                    return other;
                }
            }
        }
    }

    /// Reads each field in turn.
    async fn fill_form(&mut self, fields: &[Field]) -> Reply {
        let mut content = Map::new();
        for field in fields {
            let mut head = Line::new(format!("  {}", field.name), Look::Bold);
            if !field.about.is_empty() {
                head = head.and(format!(" — {}", field.about), Look::Plain);
            }
            let required = if field.required { ", required" } else { "" };
            head = head.and(format!(" ({}{required})", field.type_name()), Look::Dim);
            let mut lines = vec![head];
            if let Some(options) = field.option_list() {
                lines.push(Line::new(format!("    choices: {options}"), Look::Dim));
            }
            self.screen().lines(&lines);
            let prompt = match &field.default {
                Some(default) => format!("  {} [{}]> ", field.name, show(default)),
                None => format!("  {}> ", field.name),
            };
            loop {
                self.screen().set_prompt(Line::new(&prompt, Look::Warn));
                match self.input.next(Mode::Field).await {
                    InputEvent::Submit(text) => match field.read(&text) {
                        Ok(value) => {
                            let shown = value.as_ref().map_or("(default)".into(), show);
                            self.note(format!("  {}: {shown}", field.name), Look::Dim);
                            if let Some(value) = value {
                                content.insert(field.name.clone(), value);
                            }
                            break;
                        }
                        Err(why) => self.note(format!("  {why}; try again"), Look::Bad),
                    },
                    InputEvent::Escape | InputEvent::Eof => return Reply::Decline,
                    InputEvent::Interrupt => return Reply::Cancel,
                    InputEvent::Key(_) => {}
                }
            }
        }
        Reply::Accept(content)
    }

    /// Shows the URL and asks whether the user goes there.
    async fn visit(&mut self, url: &str) -> Reply {
        self.screen().lines(&[
            Line::new("  open: ", Look::Dim).and(url, Look::Accent),
            Line::new(
                "  (open it yourself; accepting tells the server you went there)",
                Look::Dim,
            ),
        ]);
        let question =
            Line::new("go there? ", Look::Warn).and("[o]pen / [d]ecline (Esc) ", Look::Bold);
        self.screen().set_prompt(question);
        loop {
            let key = match self.input.next(Mode::Choice).await {
                InputEvent::Key(key) => key,
                InputEvent::Submit(text) => text.trim().chars().next().unwrap_or('n'),
                InputEvent::Escape | InputEvent::Eof => return Reply::Decline,
                InputEvent::Interrupt => return Reply::Cancel,
            };
            match key.to_ascii_lowercase() {
                'o' | 'y' => return Reply::Accept(Map::new()),
                'd' | 'n' => return Reply::Decline,
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({ "type": "object", "properties": {
            "name": { "type": "string", "title": "Name", "description": "Your name" },
            "age": { "type": "integer", "default": 42, "maximum": 120 },
            "ratio": { "type": "number" },
            "ok": { "type": "boolean" },
            "friend": { "type": "string", "enum": ["Monica", "Ross"], "default": "Monica" },
            "hero": { "type": "string", "oneOf": [{ "const": "h1", "title": "Superman" }] },
            "fish": { "type": "array", "items": { "anyOf": [
                { "const": "f1", "title": "Tuna" }, { "const": "f2", "title": "Trout" } ] } }
        }, "required": ["name"] })
    }

    #[test]
    fn each_field_reads_its_type_and_says_why_not() {
        let fields = fields(&schema());
        let field = |name: &str| fields.iter().find(|f| f.name == name).unwrap().clone();
        let name = field("name");
        assert_eq!(name.about, "Name: Your name");
        assert!(name.required);
        assert_eq!(name.read(""), Err("this field is required".into()));
        assert_eq!(name.read(" Ada "), Ok(Some(json!("Ada"))));
        // Enter takes the default: the field is left for the loop to fill.
        assert_eq!(field("age").read(""), Ok(None));
        assert_eq!(field("age").read("7"), Ok(Some(json!(7))));
        assert_eq!(
            field("age").read("500"),
            Err("the field \"age\" must be at most 120".into())
        );
        assert!(
            field("age")
                .read("many")
                .unwrap_err()
                .contains("whole number")
        );
        assert_eq!(field("ratio").read("0.5"), Ok(Some(json!(0.5))));
        assert!(field("ratio").read("half").is_err());
        assert_eq!(field("ok").read("y"), Ok(Some(json!(true))));
        assert_eq!(field("ok").read("No"), Ok(Some(json!(false))));
        assert!(field("ok").read("maybe").is_err());
        let friend = field("friend");
        assert_eq!(friend.option_list().unwrap(), "1) Monica  2) Ross");
        assert_eq!(friend.read("2"), Ok(Some(json!("Ross"))));
        assert_eq!(friend.read("Monica"), Ok(Some(json!("Monica"))));
        assert!(friend.read("Joey").unwrap_err().contains("not one of"));
        let hero = field("hero");
        assert_eq!(hero.option_list().unwrap(), "1) Superman (h1)");
        assert_eq!(hero.read("superman"), Ok(Some(json!("h1"))));
        let fish = field("fish");
        assert_eq!(fish.read("1, Trout"), Ok(Some(json!(["f1", "f2"]))));
        assert!(fish.read("1, shark").is_err());
    }
}
