//! A terminal chat over whichever provider the environment configures.
//!
//! The provider is picked at run time by `agentkit::provider`: an
//! `OPENAI_BASE_URL` that is not OpenAI's (a compatible server such as
//! Ollama or llama.cpp) wins, then `OPENAI_API_KEY` (the Responses API),
//! then `ANTHROPIC_API_KEY`; `AGENTKIT_PROVIDER` picks explicitly and
//! `AGENTKIT_MODEL` sets the model. Answers stream as they arrive, reasoning dimmed.
//! Ctrl-C during an answer cancels that turn (the connection is dropped at
//! once); Ctrl-C at the prompt, or Ctrl-D, quits.

use agentkit::provider::ProviderConfig;
use agentkit_core::{CancellationController, Delta, Item, PartId, PartKind};
use agentkit_loop::{
    Agent, AgentEvent, LoopError, LoopInterrupt, LoopObserver, LoopStep, ModelAdapter,
    SessionConfig,
};
use std::collections::HashSet;
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, BufReader};

const HELP: &str = "\
Set one of:
  OPENAI_BASE_URL=http://127.0.0.1:11434/v1   a compatible server (Ollama, llama.cpp, vLLM),
    with AGENTKIT_MODEL=<model>               and OPENAI_API_KEY if it needs one
  OPENAI_API_KEY=sk-...                       OpenAI (Responses API; AGENTKIT_PROVIDER=openai-chat
                                              for Chat Completions)
  ANTHROPIC_API_KEY=sk-ant-...                Anthropic
and optionally AGENTKIT_MODEL=<model name>, AGENTKIT_MAX_TOKENS=<n>.";

/// Prints streamed text as it arrives; reasoning is dimmed so it reads as
/// an aside.
#[derive(Default)]
struct Printer {
    reasoning: Mutex<HashSet<PartId>>,
}

impl LoopObserver for Printer {
    fn handle_event(&self, event: AgentEvent) {
        let mut out = std::io::stdout().lock();
        match event {
            AgentEvent::ContentDelta { delta } => match delta {
                Delta::BeginPart {
                    part_id,
                    kind: PartKind::Reasoning,
                } => {
                    self.reasoning.lock().unwrap().insert(part_id);
                }
                Delta::AppendText { part_id, chunk } => {
                    if self.reasoning.lock().unwrap().contains(&part_id) {
                        let _ = write!(out, "\x1b[2m{chunk}\x1b[0m");
                    } else {
                        let _ = write!(out, "{chunk}");
                    }
                }
                Delta::CommitPart { part_id }
                    if self.reasoning.lock().unwrap().remove(&part_id) =>
                {
                    let _ = writeln!(out);
                }
                _ => {}
            },
            AgentEvent::Warning { message } => eprintln!("\n[warning: {message}]"),
            _ => {}
        }
        let _ = out.flush();
    }
}

async fn chat<M: ModelAdapter>(model: M) -> Result<(), LoopError> {
    let controller = CancellationController::new();
    let busy = Arc::new(AtomicBool::new(false));
    {
        let controller = controller.clone();
        let busy = busy.clone();
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                if busy.load(Ordering::SeqCst) {
                    controller.interrupt();
                } else {
                    println!();
                    std::process::exit(0);
                }
            }
        });
    }
    let agent = Agent::builder()
        .model(model)
        .cancellation(controller.handle())
        .observer(Printer::default())
        .transcript(vec![Item::system(
            "You are a helpful assistant. Be concise.",
        )])
        .build()?;
    let mut driver = agent.start(SessionConfig::new("chat")).await?;
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    loop {
        match driver.next().await {
            Ok(LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request))) => {
                print!("\n> ");
                let _ = std::io::stdout().flush();
                let Ok(Some(line)) = lines.next_line().await else {
                    println!();
                    return Ok(());
                };
                if line.trim().is_empty() {
                    continue;
                }
                busy.store(true, Ordering::SeqCst);
                request.submit(&mut driver, vec![Item::user(line)])?;
            }
            // No tools are offered, so nothing needs approval; approve in
            // case a model calls one anyway, and the loop answers it.
            Ok(LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending))) => {
                pending.approve(&mut driver)?;
            }
            Ok(LoopStep::Interrupt(_)) => {}
            Ok(LoopStep::Finished(result)) => {
                busy.store(false, Ordering::SeqCst);
                if result.finish_reason == agentkit_core::FinishReason::Cancelled {
                    print!(" [cancelled]");
                }
                println!();
            }
            Err(error) => {
                busy.store(false, Ordering::SeqCst);
                return Err(error);
            }
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let config = match ProviderConfig::from_env() {
        Ok(config) => config,
        Err(error) => {
            eprintln!("chat: {error}\n\n{HELP}");
            return ExitCode::from(2);
        }
    };
    eprintln!("[{} · {}]", config.kind, config.model);
    let result = match config.build() {
        Ok(model) => chat(model).await,
        Err(error) => {
            eprintln!("chat: {error}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("\nchat: {error}");
            ExitCode::FAILURE
        }
    }
}
