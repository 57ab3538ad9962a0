//! The offline demo: a scripted model fixing a failing test for real.
//!
//! The bundled sample project (`sample-project/`: a small Python module and
//! its unittest tests, one of which fails) is copied to a scratch directory,
//! and a [`ScriptedModel`] works on it with the real tools: it lists the
//! files, runs the tests with `shell_exec`, reads the module, proposes a
//! one-line fix (which needs approval) and runs the tests again.
//!
//! The script is not fixed in advance. A [`Director`] watches the loop's
//! events and, just before each model call, queues the turn that fits what
//! really happened: a denied fix is acknowledged, a test run skipped by an
//! urgent message is tried again later, a steering message is answered.

use agentkit_core::{
    Delta, FinishReason, Item, PartId, PartKind, TokenUsage, ToolResultPart, Usage,
};
use agentkit_loop::{AgentEvent, LoopObserver};
use agentkit_testkit::{ScriptedModel, ScriptedTurn};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// The sample project, compiled into the binary so the demo runs from
/// anywhere.
const SAMPLE: &[(&str, &str)] = &[
    ("README.md", include_str!("../sample-project/README.md")),
    ("calc.py", include_str!("../sample-project/calc.py")),
    (
        "test_calc.py",
        include_str!("../sample-project/test_calc.py"),
    ),
];

/// The task the demo user types.
pub const TASK: &str = "The tests of this project fail. Find out why and fix it.";

/// The test command.
const TESTS: &str = "python3 -m unittest -v";
const BUGGY: &str = "return total(values) / (len(values) - 1)";
const FIXED: &str = "return total(values) / len(values)";

/// Copies the sample project to a fresh scratch directory and returns it.
pub fn scratch_project() -> std::io::Result<PathBuf> {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    let dir =
        std::env::temp_dir().join(format!("coding-agent-demo-{}-{millis}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    for (name, text) in SAMPLE {
        std::fs::write(dir.join(name), text)?;
    }
    Ok(dir)
}

/// `true` when the demo's fix is in place in `dir`.
pub fn is_fixed(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("calc.py")).is_ok_and(|text| text.contains(FIXED))
}

/// The steps of the demo's plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Look,
    RunTests,
    Read,
    Fix,
    RunTestsAgain,
    Done,
}

#[derive(Default)]
struct Seen {
    /// Results since the last model call.
    results: Vec<ToolResultPart>,
    /// Messages the user typed (prompts or injected) since the last call.
    user: Vec<String>,
    /// An urgent message skipped tools since the last call.
    urgent: bool,
}

/// Queues the demo model's next turn before each model call.
pub struct Director {
    model: ScriptedModel,
    state: Mutex<(Stage, Seen)>,
}

impl Director {
    /// A director for `model` (a clone shares its script).
    pub fn new(model: ScriptedModel) -> Self {
        Self {
            model,
            state: Mutex::new((Stage::Look, Seen::default())),
        }
    }
}

impl LoopObserver for Director {
    fn handle_event(&self, event: AgentEvent) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (stage, seen) = &mut *state;
        match event {
            AgentEvent::ToolResultReceived { result } => seen.results.push(result),
            AgentEvent::InputAccepted { items } => {
                seen.user.extend(items.iter().map(Item::text_content));
            }
            AgentEvent::SoftInterruptInjected {
                item,
                skipped_tools,
                ..
            } => {
                seen.user.push(item.text_content());
                seen.urgent |= skipped_tools > 0;
            }
            AgentEvent::TurnStarted { .. } => {
                let seen = std::mem::take(seen);
                let turn = next_turn(stage, &seen);
                self.model.push_turns([turn]);
            }
            _ => {}
        }
    }
}

/// The last result that really ran (not skipped, not cancelled).
fn real_result(seen: &Seen) -> Option<&ToolResultPart> {
    seen.results.iter().rev().find(|r| {
        let text = r.output.to_text();
        !(r.is_error && (text.contains("skipped") || text.contains("cancel")))
    })
}

fn next_turn(stage: &mut Stage, seen: &Seen) -> ScriptedTurn {
    // What the user said since the last call, acknowledged first.
    let heard = seen
        .user
        .iter()
        .filter(|text| text.as_str() != TASK)
        .map(|text| format!("“{}”", text.trim()))
        .collect::<Vec<_>>();
    let mut preface = String::new();
    if !heard.is_empty() {
        preface = format!("Noted: {}. ", heard.join(", "));
    }
    if seen.urgent {
        return say(&format!(
            "{preface}I stopped the remaining steps. Tell me how to go on, \
             or say “continue” to pick up where I left off."
        ))
        .finish(FinishReason::Completed);
    }
    let result = real_result(seen);
    match *stage {
        Stage::Look => {
            *stage = Stage::RunTests;
            say(&format!("{preface}I'll look at the project first."))
                .call("call-1", "fs_list_directory", json!({ "path": "." }))
                .finish(FinishReason::ToolCall)
        }
        Stage::RunTests => {
            *stage = Stage::Read;
            let turn =
                reason("A Python module with unittest tests. Running them shows what is broken.");
            stream(turn, "text", PartKind::Text, &preface)
                .call("call-2", "shell_exec", json!({ "command": TESTS }))
                .finish(FinishReason::ToolCall)
        }
        Stage::Read => {
            let Some(result) = result else {
                *stage = Stage::RunTests;
                return say(&format!(
                    "{preface}I could not run the tests (not approved). Approve \
                     `{TESTS}` next time, or tell me what to do instead."
                ))
                .finish(FinishReason::Completed);
            };
            let output = result.output.to_text();
            if !result.is_error && output.contains("\nOK") {
                *stage = Stage::Done;
                return say(&format!("{preface}All tests pass already."))
                    .finish(FinishReason::Completed);
            }
            *stage = Stage::Fix;
            say(&format!(
                "{preface}`test_average` fails: `average([1, 2, 3, 4])` gives 3.33 instead of 2.5. \
                 Let me read calc.py."
            ))
            .call("call-3", "fs_read_file", json!({ "path": "calc.py" }))
            .finish(FinishReason::ToolCall)
        }
        Stage::Fix => {
            *stage = Stage::RunTestsAgain;
            let turn = reason("Line 11 divides by len(values) - 1; a mean divides by len(values).");
            stream(
                turn,
                "text",
                PartKind::Text,
                &format!(
                    "{preface}`average` divides by `len(values) - 1`, but the mean divides by \
                     `len(values)`. Here is the one-line fix:"
                ),
            )
            .call(
                "call-4",
                "fs_replace_in_file",
                json!({ "path": "calc.py", "old_string": BUGGY, "new_string": FIXED }),
            )
            .finish(FinishReason::ToolCall)
        }
        Stage::RunTestsAgain => {
            let applied = result.is_some_and(|r| !r.is_error);
            if !applied {
                *stage = Stage::Fix;
                return say(&format!(
                    "{preface}Understood, I left calc.py unchanged. The fix is to divide by \
                     `len(values)` in `average`; say “continue” if you want me to apply it."
                ))
                .finish(FinishReason::Completed);
            }
            *stage = Stage::Done;
            say(&format!("{preface}Fixed. Running the tests again."))
                .call("call-5", "shell_exec", json!({ "command": TESTS }))
                .finish(FinishReason::ToolCall)
        }
        Stage::Done => {
            let passed = result.is_some_and(|r| !r.is_error && r.output.to_text().contains("\nOK"));
            if passed {
                say(&format!(
                    "{preface}All 3 tests pass now. The bug was in `average` (calc.py): it divided \
                     the total by `len(values) - 1` instead of `len(values)`."
                ))
                .finish(FinishReason::Completed)
            } else if seen.results.is_empty() && !heard.is_empty() {
                say(&format!(
                    "{preface}This is the offline demo: a scripted model that can only do this one \
                     task. Set OPENAI_API_KEY, ANTHROPIC_API_KEY or OPENAI_BASE_URL to talk to a \
                     real model."
                ))
                .finish(FinishReason::Completed)
            } else {
                say(&format!(
                    "{preface}The tests still fail; see the output above."
                ))
                .finish(FinishReason::Completed)
            }
        }
    }
}

/// A turn that streams `text` word by word, like a model would.
fn say(text: &str) -> ScriptedTurn {
    stream(ScriptedTurn::new(), "text", PartKind::Text, text)
}

/// A turn that opens with streamed reasoning.
fn reason(text: &str) -> ScriptedTurn {
    stream(ScriptedTurn::new(), "reasoning", PartKind::Reasoning, text)
}

/// Adds a streamed part to `turn`, with an estimated usage (about four
/// characters per token) so the status line has something honest to count.
fn stream(turn: ScriptedTurn, id: &str, kind: PartKind, text: &str) -> ScriptedTurn {
    if text.is_empty() {
        return turn;
    }
    let part_id = PartId::new(id);
    let mut turn = turn.delta(Delta::BeginPart {
        part_id: part_id.clone(),
        kind,
    });
    for word in text.split_inclusive(' ') {
        turn = turn
            .delta(Delta::AppendText {
                part_id: part_id.clone(),
                chunk: word.to_owned(),
            })
            .delay(Duration::from_millis(WORD_DELAY_MS));
    }
    turn.delta(Delta::CommitPart { part_id })
        .usage(Usage::from_tokens(TokenUsage {
            output_tokens: text.len().div_ceil(4) as u64,
            ..TokenUsage::default()
        }))
}

/// The pause between streamed words.
const WORD_DELAY_MS: u64 = 15;

/// The demo's model: its script starts empty; the [`Director`] queues each
/// turn just before it is needed.
pub fn model() -> ScriptedModel {
    ScriptedModel::new([])
}
