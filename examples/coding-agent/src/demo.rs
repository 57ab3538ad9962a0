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

/// `true` when `python3` runs: the sample project's tests need it.
pub fn python_available() -> bool {
    std::process::Command::new("python3")
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
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
    state: Mutex<Plan>,
}

/// Where the demo stands.
struct Plan {
    /// The next step.
    stage: Stage,
    /// The step whose tool call the last turn made, to redo it when the
    /// call was skipped or cancelled.
    issued: Option<Stage>,
    seen: Seen,
}

impl Director {
    /// A director for `model` (a clone shares its script).
    pub fn new(model: ScriptedModel) -> Self {
        Self {
            model,
            state: Mutex::new(Plan {
                stage: Stage::Look,
                issued: None,
                seen: Seen::default(),
            }),
        }
    }
}

impl LoopObserver for Director {
    fn handle_event(&self, event: AgentEvent) {
        let mut plan = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let seen = &mut plan.seen;
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
            AgentEvent::ModelCallStarted { .. } => {
                let seen = std::mem::take(seen);
                // A call skipped by an urgent message or cancelled by
                // Ctrl-C did not happen: its step is done again later.
                if let Some(issued) = plan.issued.take()
                    && real_result(&seen).is_none()
                {
                    plan.stage = issued;
                }
                let before = plan.stage;
                let turn = next_turn(&mut plan.stage, &seen);
                if turn.makes_call {
                    plan.issued = Some(before);
                }
                self.model.push_turns([turn.turn]);
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

/// The next scripted turn, and whether it calls a tool.
struct Next {
    turn: ScriptedTurn,
    makes_call: bool,
}

impl From<ScriptedTurn> for Next {
    fn from(turn: ScriptedTurn) -> Self {
        Self {
            turn,
            makes_call: false,
        }
    }
}

fn calls(turn: ScriptedTurn) -> Next {
    Next {
        turn: turn.finish(FinishReason::ToolCall),
        makes_call: true,
    }
}

fn answers(turn: ScriptedTurn) -> Next {
    turn.finish(FinishReason::Completed).into()
}

fn next_turn(stage: &mut Stage, seen: &Seen) -> Next {
    // What the user said since the last call, acknowledged first.
    let heard = seen
        .user
        .iter()
        .filter(|text| text.as_str() != TASK)
        .map(|text| format!("“{}”", text.trim()))
        .collect::<Vec<_>>();
    let preface = if heard.is_empty() {
        String::new()
    } else {
        format!("Noted: {}. ", heard.join(", "))
    };
    if seen.urgent {
        return answers(say(&format!(
            "{preface}I stopped the remaining steps. Tell me how to go on, \
             or say “continue” to pick up where I left off."
        )));
    }
    let result = real_result(seen);
    match *stage {
        Stage::Look => {
            *stage = Stage::RunTests;
            calls(
                say(&format!("{preface}I'll look at the project first.")).call(
                    "call-1",
                    "fs_list_directory",
                    json!({ "path": "." }),
                ),
            )
        }
        Stage::RunTests => {
            *stage = Stage::Read;
            let turn =
                reason("A Python module with unittest tests. Running them shows what is broken.");
            calls(stream(turn, "text", PartKind::Text, &preface).call(
                "call-2",
                "shell_exec",
                json!({ "command": TESTS }),
            ))
        }
        Stage::Read => {
            let Some(result) = result.filter(|r| r.output.to_text().starts_with("exit code"))
            else {
                *stage = Stage::RunTests;
                return answers(say(&format!(
                    "{preface}I could not run the tests (not approved). Approve \
                     `{TESTS}` next time, or tell me what to do instead."
                )));
            };
            if !result.is_error && result.output.to_text().contains("\nOK") {
                *stage = Stage::Done;
                return answers(say(&format!("{preface}All tests pass already.")));
            }
            *stage = Stage::Fix;
            calls(
                say(&format!(
                    "{preface}`test_average` fails: `average([1, 2, 3, 4])` gives 3.33 instead \
                     of 2.5. Let me read calc.py."
                ))
                .call("call-3", "fs_read_file", json!({ "path": "calc.py" })),
            )
        }
        Stage::Fix => {
            *stage = Stage::RunTestsAgain;
            let turn = reason("Line 11 divides by len(values) - 1; a mean divides by len(values).");
            let turn = stream(
                turn,
                "text",
                PartKind::Text,
                &format!(
                    "{preface}`average` divides by `len(values) - 1`, but the mean divides by \
                     `len(values)`. Here is the one-line fix:"
                ),
            );
            calls(turn.call(
                "call-4",
                "fs_replace_in_file",
                json!({ "path": "calc.py", "old_string": BUGGY, "new_string": FIXED }),
            ))
        }
        Stage::RunTestsAgain => {
            if result.is_none_or(|r| r.is_error) {
                *stage = Stage::Fix;
                return answers(say(&format!(
                    "{preface}Understood, I left calc.py unchanged. The fix is to divide by \
                     `len(values)` in `average`; say “continue” if you want me to apply it."
                )));
            }
            *stage = Stage::Done;
            calls(
                say(&format!("{preface}Fixed. Running the tests again.")).call(
                    "call-5",
                    "shell_exec",
                    json!({ "command": TESTS }),
                ),
            )
        }
        Stage::Done => {
            let passed = result.is_some_and(|r| !r.is_error && r.output.to_text().contains("\nOK"));
            let text = if passed {
                "All 3 tests pass now. The bug was in `average` (calc.py): it divided the total \
                 by `len(values) - 1` instead of `len(values)`."
            } else if result.is_some() {
                "The tests still fail; see the output above."
            } else {
                "This is the offline demo: a scripted model that can only do this one task. \
                 Set OPENAI_API_KEY, ANTHROPIC_API_KEY or OPENAI_BASE_URL to talk to a real \
                 model."
            };
            answers(say(&format!("{preface}{text}")))
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
                chunk: word.into(),
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
