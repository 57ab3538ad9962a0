//! The program's main loop: the driver pulled forward while the user types.
//!
//! Each `next()` of the driver runs concurrently with the keyboard: what the
//! user submits meanwhile goes to the soft-interrupt queue (steer, or
//! urgent with a leading `!`) or to a local follow-up list (leading `+`),
//! and Ctrl-C cancels the turn through the agent's cancellation handle. At
//! each pause the loop does what the pause asks: read the next prompt, ask
//! for an approval, stop at the step limit. Errors are shown and the
//! conversation goes on; only Ctrl-D or a second Ctrl-C at the prompt quit.

mod question;

use crate::context::{ContextControl, ContextKeeper, window_for};
use crate::diagnose;
use crate::input::{Input, InputEvent, Mode};
use crate::policy::{ALWAYS_KEY, CodingPolicy, SessionAllowList, describe_key};
use crate::provider::ModelInfo;
use crate::screen::{Line, Look, Screen};
use crate::sessions::{SessionError, Sessions, shorten, system_item, tokens_known};
use crate::todo::todo_tool;
use crate::view::View;
use agentkit_core::{CancellationController, FinishReason, Item, ItemKind, SessionId, Usage};
use agentkit_loop::{
    Agent, AgentBuilder, InputRequest, LoopError, LoopInterrupt, LoopObserver, LoopSnapshot,
    LoopStep, ModelAdapter, ModelSession, PendingApproval, SoftInterruptHandle,
};
use agentkit_mcp::McpServerManager;
use agentkit_store::{Session, StoreError};
use agentkit_tool_fs::{FsToolsConfig, fs_tools};
use agentkit_tool_shell::{ShellConfig, ShellSandbox, shell_tools};
use agentkit_tools_core::ToolRegistry;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Everything the loop needs besides the model.
pub struct Setup {
    /// The directory the tools work in.
    pub workspace: PathBuf,
    /// Approve every call without asking.
    pub yes: bool,
    /// The first message, sent as if typed.
    pub prompt: Option<String>,
    /// Quit when the first prompt's turn is done.
    pub one_shot: bool,
    /// Model calls per user turn before pausing.
    pub max_steps: u32,
    /// The model's label and prices.
    pub info: ModelInfo,
    /// Where the session is saved (in memory for the demo).
    pub sessions: Sessions,
    /// A saved session to continue.
    pub resume: Option<SessionId>,
    /// Connected MCP servers.
    pub mcp: Option<McpServerManager>,
    /// Another observer (the demo's director).
    pub observer: Option<Arc<dyn LoopObserver>>,
    /// The screen.
    pub screen: Arc<Mutex<Screen>>,
}

/// Why the program cannot go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppError {
    /// The agent could not be built or started.
    #[error(transparent)]
    Loop(#[from] LoopError),
    /// The session could not be created, leased or opened.
    #[error(transparent)]
    Session(#[from] SessionError),
}

impl From<StoreError> for AppError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Loop(error) => AppError::Loop(error),
            other => AppError::Session(other.into()),
        }
    }
}

/// How the session ended, for `main`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Turns that finished.
    pub turns: u32,
    /// Why the last turn ended.
    pub last_finish: Option<FinishReason>,
    /// Errors shown along the way.
    pub errors: u32,
}

fn system_prompt(workspace: &Path) -> String {
    format!(
        "You are a coding agent working in the directory {}. Use the fs_* tools to \
         read and change files there (paths are relative to it) and shell_exec to run \
         commands in it, such as the project's tests. Read before you change, keep changes \
         small, and run the tests after changing code. For a task of several steps, keep a \
         todo list with todo_write. Be concise.",
        workspace.display()
    )
}

/// What `/help` shows.
const HELP: &str = "\
/help       this list
/compact    summarize the conversation so far (before the next model call)
/clear      start a fresh conversation (the next message goes alone)
/quit       quit (also /exit, Ctrl-D, or Ctrl-C twice)

While the agent works: Enter queues a steering message for the next safe
point, !message is urgent (skips the rest of the tool round), +message is a
follow-up for when the turn is done. Ctrl-C cancels the turn. The
conversation is summarized by itself when it nears the model's window.
`coding-agent --help` lists the options and environment variables.";

/// An approval answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    Yes,
    No,
    Always,
    Cancel,
}

struct Ctx {
    screen: Arc<Mutex<Screen>>,
    input: Input,
    controller: CancellationController,
    follow_ups: VecDeque<String>,
    /// The previous key at the prompt was Ctrl-C.
    armed_quit: bool,
    /// A turn was submitted and has not finished. With the view's
    /// `turn_running` (a turn a queued message started), Ctrl-C cancels
    /// it; otherwise (the step back to the prompt is still being saved)
    /// the key belongs to the prompt.
    turn_open: bool,
    /// Lines submitted at the prompt while no turn ran but the driver was
    /// still busy (starting, saving the step back to the prompt): they are
    /// the next turns' input, not steering.
    typed_ahead: VecDeque<String>,
    view: Arc<View>,
    /// `/compact` and `/clear`.
    context: ContextControl,
}

impl Ctx {
    fn screen(&self) -> std::sync::MutexGuard<'_, Screen> {
        self.screen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A turn runs: one the user submitted, or one a queued message
    /// started. Otherwise the driver may still be busy (starting, saving the
    /// step back to the prompt), but keys belong to the prompt.
    fn turn_running(&self) -> bool {
        self.turn_open || self.view.turn_running()
    }

    fn note(&self, text: impl Into<String>, look: Look) {
        self.screen().line(Line::new(text, look));
    }

    /// Routes a message typed while the agent works.
    fn queue_message(&mut self, soft: &SoftInterruptHandle, text: String) {
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        if let Some(rest) = text.strip_prefix('!') {
            let id = soft.push_urgent(Item::user(rest.trim()));
            self.note(
                format!("⧗ queued #{id} (urgent): {}", shorten(rest, 60)),
                Look::Warn,
            );
        } else if let Some(rest) = text.strip_prefix('+') {
            // Delivered by the loop only when the model would otherwise
            // finish, or as the next turn's input.
            let id = soft.push_follow_up(Item::user(rest.trim()));
            self.note(
                format!(
                    "⧗ queued follow-up #{id}: {} (sent when this turn is done)",
                    shorten(rest, 60)
                ),
                Look::Accent,
            );
        } else {
            let id = soft.push_text(text);
            self.note(
                format!("⧗ queued #{id} (steer): {}", shorten(text, 60)),
                Look::Accent,
            );
        }
    }

    /// Reads a line at the prompt; `None` means quit.
    async fn read_line(&mut self, allow_empty: bool) -> Option<String> {
        self.screen().set_prompt(Line::new("> ", Look::Bold));
        loop {
            if self.input.is_closed() {
                return None;
            }
            match self.input.next(Mode::Line).await {
                InputEvent::Submit(text) => {
                    self.armed_quit = false;
                    let text = text.trim().to_owned();
                    if text.is_empty() && !allow_empty {
                        continue;
                    }
                    match text.as_str() {
                        "/quit" | "/exit" => return None,
                        "/help" => {
                            let lines: Vec<Line> =
                                HELP.lines().map(|l| Line::new(l, Look::Dim)).collect();
                            self.screen().lines(&lines);
                            continue;
                        }
                        "/compact" => {
                            self.context.compact();
                            self.note(
                                "the conversation will be summarized before the next model call",
                                Look::Accent,
                            );
                            continue;
                        }
                        "/clear" => {
                            self.context.clear();
                            self.note(
                                "cleared: the next message starts a fresh conversation \
                                 (the system prompt and the saved session stay)",
                                Look::Accent,
                            );
                            continue;
                        }
                        _ => {}
                    }
                    if !text.is_empty() {
                        self.screen()
                            .line(Line::new("> ", Look::Bold).and(&text, Look::Bold));
                    }
                    return Some(text);
                }
                InputEvent::Interrupt if self.armed_quit => return None,
                InputEvent::Interrupt => {
                    self.armed_quit = true;
                    self.note("(Ctrl-C again or Ctrl-D to quit)", Look::Dim);
                }
                InputEvent::Eof => return None,
                InputEvent::Key(_) | InputEvent::Escape => {}
            }
        }
    }

    /// Asks for an approval. Text typed meanwhile is not an answer: a key
    /// other than y, n or a starts a message (finished with Enter), which
    /// is returned to be queued, and the question is asked again.
    async fn ask_approval(&mut self) -> (Answer, Vec<String>) {
        let question = Line::new("allow? ", Look::Warn)
            .and("[y]es / [n]o / [a]lways for this session ", Look::Bold);
        self.screen().set_prompt(question.clone());
        let mut typed = Vec::new();
        let answer = loop {
            if self.input.is_closed() {
                break Answer::No;
            }
            match self.input.next(Mode::Choice).await {
                InputEvent::Key(key) => match key.to_ascii_lowercase() {
                    'y' => break Answer::Yes,
                    'n' => break Answer::No,
                    'a' => break Answer::Always,
                    _ => {
                        if let Some(text) = self.read_message(key).await {
                            self.note(
                                format!("(sent once you answer: {})", shorten(&text, 50)),
                                Look::Dim,
                            );
                            typed.push(text);
                        }
                        self.screen().set_prompt(question.clone());
                    }
                },
                InputEvent::Submit(text) if !text.trim().is_empty() => {
                    self.note(
                        format!("(a message, not an answer: {})", shorten(&text, 50)),
                        Look::Dim,
                    );
                    typed.push(text);
                }
                InputEvent::Interrupt => break Answer::Cancel,
                InputEvent::Eof => break Answer::No,
                InputEvent::Submit(_) | InputEvent::Escape => {}
            }
        };
        let mut screen = self.screen();
        let shown = match answer {
            Answer::Yes => "yes",
            Answer::No => "no",
            Answer::Always => "always for this session",
            Answer::Cancel => "cancel the turn",
        };
        screen.line(Line::new(format!("  you: {shown}"), Look::Dim));
        // The turn goes on after an answer: typing steers it.
        screen.set_prompt(Line::new("steer> ", Look::Dim));
        (answer, typed)
    }

    /// Reads the rest of a message whose first character was `first`,
    /// typed at a question; `None` when it was abandoned (Ctrl-C, Ctrl-D).
    async fn read_message(&mut self, first: char) -> Option<String> {
        {
            let mut screen = self.screen();
            screen.set_prompt(Line::new("message> ", Look::Dim));
            screen.insert(first.encode_utf8(&mut [0; 4]));
        }
        loop {
            match self.input.next(Mode::Line).await {
                InputEvent::Submit(text) => return Some(text),
                InputEvent::Interrupt | InputEvent::Eof => {
                    let _ = self.screen().take_input();
                    return None;
                }
                InputEvent::Key(_) | InputEvent::Escape => {}
            }
        }
    }
}

/// Pulls the driver to its next step while reading the keyboard; the
/// session saves itself before and after the step.
async fn advance<S: ModelSession>(
    driver: &mut Session<S>,
    ctx: &mut Ctx,
) -> Result<LoopStep, StoreError> {
    let soft = driver.soft_interrupts();
    if ctx.turn_open {
        ctx.screen().set_prompt(Line::new("steer> ", Look::Dim));
    }
    let next = driver.next();
    tokio::pin!(next);
    let mut ticker = tokio::time::interval(Duration::from_millis(100));
    loop {
        tokio::select! {
            step = &mut next => return step,
            event = ctx.input.next(Mode::Line), if !ctx.input.is_closed() => match event {
                // No turn runs yet: the line is typed at the prompt.
                InputEvent::Submit(text) if !ctx.turn_running() => {
                    ctx.armed_quit = false;
                    let text = text.trim();
                    if !text.is_empty() {
                        ctx.typed_ahead.push_back(text.to_owned());
                    }
                }
                InputEvent::Submit(text) => ctx.queue_message(&soft, text),
                // No turn runs (the step back to the prompt is still being
                // saved): the key belongs to the prompt and arms quitting.
                InputEvent::Interrupt if !ctx.turn_running() => {
                    ctx.armed_quit = true;
                    ctx.note("(Ctrl-C again or Ctrl-D to quit)", Look::Dim);
                }
                InputEvent::Interrupt => {
                    ctx.controller.interrupt();
                    ctx.note("cancelling the turn…", Look::Warn);
                }
                InputEvent::Eof | InputEvent::Key(_) | InputEvent::Escape => {}
            },
            _ = ticker.tick() => ctx.screen().tick(),
        }
    }
}

/// The coding agent for `workspace`, before the host adds its cancellation
/// and observers: the fs and shell tools rooted there, the MCP servers'
/// tools, the permission policy (with the session's allow-list), the
/// compaction that keeps the conversation within the model's window and
/// the system prompt. The terminal, `exec` and the ACP server all build it
/// here.
pub fn agent_builder<M: ModelAdapter>(
    model: M,
    workspace: &Path,
    always: SessionAllowList,
    mcp: Option<&McpServerManager>,
    context: ContextKeeper,
) -> AgentBuilder<M> {
    let files = FsToolsConfig::new(workspace);
    agent_builder_with(model, workspace, always, mcp, context, files)
}

/// [`agent_builder`] with the file tools' configuration given (over ACP:
/// the editor's buffers, see `buffers.rs`).
pub fn agent_builder_with<M: ModelAdapter>(
    model: M,
    workspace: &Path,
    always: SessionAllowList,
    mcp: Option<&McpServerManager>,
    context: ContextKeeper,
    files: FsToolsConfig,
) -> AgentBuilder<M> {
    let builder = Agent::builder()
        .model(model)
        .compaction(context)
        .add_tool_source(fs_tools(files))
        // Commands run under Landlock where the kernel has it: writes only
        // beneath the workspace (the tool says so when it runs unsandboxed).
        .add_tool_source(shell_tools(
            ShellConfig::new(workspace).with_sandbox(ShellSandbox::new().restrict_reads()),
        ))
        .add_tool_source(ToolRegistry::new().with(todo_tool()))
        .permissions(CodingPolicy::new(workspace, always))
        .transcript(vec![system_item(system_prompt(workspace), workspace)]);
    match mcp {
        Some(manager) => builder.add_tool_source(manager.source()),
        None => builder,
    }
}

/// Runs the agent until the user quits.
pub async fn run<M: ModelAdapter + Clone + 'static>(
    model: M,
    setup: Setup,
) -> Result<Summary, AppError> {
    let screen = setup.screen.clone();
    let controller = CancellationController::new();
    let always = SessionAllowList::default();
    let view = Arc::new(View::new(screen.clone()));
    let workspace = setup.workspace.clone();
    let control = ContextControl::default();
    let window = window_for(&setup.info.model, setup.info.window);
    let keeper = ContextKeeper::new(model.clone(), window, control.clone());

    let mut builder = agent_builder(
        model,
        &workspace,
        always.clone(),
        setup.mcp.as_ref(),
        keeper,
    )
    .cancellation(controller.handle());
    if let Some(observer) = setup.observer.clone() {
        builder = builder.observer_arc(observer);
    }
    let lease = match &setup.resume {
        Some(id) => {
            let note =
                |limit: std::time::Duration| {
                    screen.lock().unwrap_or_else(|e| e.into_inner()).line(Line::new(
                    format!(
                        "session {id} is still leased (by a coding-agent that was killed, or \
                         one still running): waiting up to {} s for the lease to expire…",
                        limit.as_secs_f32().ceil()
                    ),
                    Look::Warn,
                ))
                };
            setup.sessions.lease(id, note).await?
        }
        None => setup.sessions.create(&setup.workspace).await?,
    };
    // The store's recorder appends every item as it happens.
    let agent = lease.record(builder.observer_arc(view.clone())).build()?;
    let mut driver = lease.open(&agent).await?;
    if setup.resume.is_some() {
        show_history(&screen, &driver.snapshot());
    }

    let mut ctx = Ctx {
        screen: screen.clone(),
        input: Input::new(screen.clone()),
        controller,
        follow_ups: VecDeque::new(),
        armed_quit: false,
        // A resumed session may be in the middle of a turn.
        turn_open: setup.resume.is_some(),
        typed_ahead: VecDeque::new(),
        view: view.clone(),
        context: control,
    };
    let mut summary = Summary::default();
    let mut first_prompt = setup.prompt.clone();
    let mut steps = 0u32;
    // A resumed session goes on counting from its stored totals.
    let mut session_usage = driver.usage().clone();
    loop {
        let step = advance(&mut driver, &mut ctx).await;
        match step {
            Ok(LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request))) => {
                ctx.turn_open = false;
                view.reset_round();
                ctx.screen().set_activity(None);
                let text = if let Some(text) = ctx.follow_ups.pop_front() {
                    ctx.note(
                        format!("sending follow-up: {}", shorten(&text, 60)),
                        Look::Accent,
                    );
                    Some(text)
                } else if let Some(text) =
                    first_prompt.take().or_else(|| ctx.typed_ahead.pop_front())
                {
                    ctx.screen()
                        .line(Line::new("> ", Look::Bold).and(&text, Look::Bold));
                    Some(text)
                } else if setup.one_shot && summary.turns > 0 {
                    None
                } else {
                    ctx.read_line(false).await
                };
                let Some(text) = text else { break };
                steps = 0;
                match request.submit(&mut driver, vec![Item::user(text)]) {
                    Ok(()) => ctx.turn_open = true,
                    Err(error) => {
                        summary.errors += 1;
                        ctx.note(format!("error: {error}"), Look::Bad);
                    }
                }
            }
            Ok(LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending))) => {
                if let Err(error) =
                    answer_approval(&mut driver, &mut ctx, pending, setup.yes, &always).await
                {
                    summary.errors += 1;
                    ctx.note(format!("error: {error}"), Look::Bad);
                }
            }
            Ok(LoopStep::Interrupt(LoopInterrupt::Question(pending))) => {
                if let Err(error) = ctx.answer_question(&mut driver, pending).await {
                    summary.errors += 1;
                    ctx.note(format!("error: {error}"), Look::Bad);
                }
            }
            Ok(LoopStep::Interrupt(LoopInterrupt::AfterToolResult(round))) => {
                steps += 1;
                if steps >= setup.max_steps {
                    steps = 0;
                    ctx.screen().set_activity(None);
                    ctx.note(
                        format!(
                            "step limit: {} tool rounds this turn. Press Enter to go on, or type a message.",
                            setup.max_steps
                        ),
                        Look::Warn,
                    );
                    match ctx.read_line(true).await {
                        None => break,
                        Some(text) if text.is_empty() => {}
                        Some(text) => {
                            if let Err(error) = round.submit(&mut driver, vec![Item::user(text)]) {
                                ctx.note(format!("error: {error}"), Look::Bad);
                            }
                        }
                    }
                }
            }
            // A kind of pause this program does not know (the loop's
            // interrupts are non-exhaustive): a blocking one cannot be
            // answered, so the session stops rather than spin.
            Ok(LoopStep::Interrupt(other)) => {
                if other.is_blocking() {
                    summary.errors += 1;
                    ctx.note(format!("cannot answer {other:?}; quitting"), Look::Bad);
                    break;
                }
            }
            Ok(LoopStep::Finished(result)) => {
                ctx.turn_open = false;
                view.reset_round();
                summary.turns += 1;
                summary.last_finish = Some(result.finish_reason.clone());
                ctx.screen().set_activity(None);
                if result.finish_reason == FinishReason::Cancelled {
                    ctx.note(
                        "turn cancelled; the transcript is intact. Type to go on.",
                        Look::Warn,
                    );
                }
                session_usage.accumulate(&result.usage);
                ctx.screen()
                    .line(status_line(&setup.info, &result.usage, &session_usage));
            }
            Err(StoreError::LeaseLost(id)) => {
                // Another process took the session over: it must not be
                // driven from here any more.
                ctx.screen().set_activity(None);
                ctx.note(
                    format!("session {id} was taken over by another coding-agent; quitting"),
                    Look::Bad,
                );
                summary.errors += 1;
                break;
            }
            Err(error) => {
                view.cut_answer();
                view.reset_round();
                summary.errors += 1;
                ctx.screen().set_activity(None);
                show_error(&ctx, &error, &driver, &setup.info);
                if setup.one_shot {
                    // Nobody is there to retry: quit (the exit code says
                    // the turn failed).
                    break;
                }
                if !recover(&mut driver, &mut ctx).await {
                    break;
                }
            }
        }
    }
    ctx.screen().close();
    if let Err(error) = driver.close().await {
        eprintln!("coding-agent: the session was not closed cleanly: {error}");
    }
    if let Some(manager) = &setup.mcp {
        manager.disconnect_all().await;
    }
    Ok(summary)
}

/// Shows an approval request and resolves it with the user's answer.
async fn answer_approval<S: ModelSession>(
    driver: &mut Session<S>,
    ctx: &mut Ctx,
    pending: PendingApproval,
    yes: bool,
    always: &SessionAllowList,
) -> Result<(), LoopError> {
    show_approval(ctx, &pending);
    let answer = if yes {
        ctx.note("  approved (--yes)", Look::Dim);
        Answer::Yes
    } else {
        let (answer, typed) = ctx.ask_approval().await;
        let soft = driver.soft_interrupts();
        for text in typed {
            ctx.queue_message(&soft, text);
        }
        answer
    };
    match answer {
        Answer::Yes => pending.approve(driver),
        Answer::Always => {
            if let Some(key) = pending.request.metadata.get(ALWAYS_KEY) {
                let key = key.as_str().unwrap_or_default();
                always.add(key);
                ctx.note(
                    format!("  allowed from now on: {}", describe_key(key)),
                    Look::Dim,
                );
            }
            pending.approve(driver)
        }
        Answer::No => pending.deny_with_reason(driver, "the user declined"),
        Answer::Cancel => {
            ctx.controller.interrupt();
            pending.deny_with_reason(driver, "the user cancelled the turn")
        }
    }
}

/// Shows an error of `next()`, with its likely cause when there is one.
fn show_error<S: ModelSession>(
    ctx: &Ctx,
    error: &StoreError,
    driver: &Session<S>,
    info: &ModelInfo,
) {
    let window = window_for(&info.model, info.window);
    let (cause, detail) = diagnose::describe(error, driver, info.base_url.as_deref(), window);
    ctx.note(format!("error: {cause}"), Look::Bad);
    if let Some(detail) = detail {
        ctx.note(format!("  ({detail})"), Look::Dim);
    }
}

/// Waits for the user after an error: Enter retries, a message is sent
/// with the retry. `false` means the user quit.
async fn recover<S: ModelSession>(driver: &mut Session<S>, ctx: &mut Ctx) -> bool {
    ctx.note(
        "the conversation is kept: press Enter to retry, or type a message",
        Look::Dim,
    );
    match ctx.read_line(true).await {
        None => false,
        Some(text) if text.is_empty() => true,
        Some(text) => {
            // Sent with the retried call; if a tool round is open, it
            // waits in the queue for the next safe point.
            let request = InputRequest {
                session_id: driver.session_id().clone(),
                reason: "retry after an error".into(),
            };
            if request
                .submit(driver, vec![Item::user(text.clone())])
                .is_err()
            {
                driver.soft_interrupts().push_text(text);
            }
            true
        }
    }
}

fn status_line(info: &ModelInfo, turn: &Usage, session: &Usage) -> Line {
    // A server that reports no usage leaves the counts unknown, not zero.
    let money = |usage: &Usage| match info.cost(usage) {
        Some(cost) if tokens_known(usage) || usage.cost.is_some() => format!("${cost:.4}"),
        _ => "cost n/a".into(),
    };
    let turn_tokens = if tokens_known(turn) {
        format!(
            "{} in · {} out",
            turn.tokens.input_tokens, turn.tokens.output_tokens
        )
    } else {
        "? in · ? out (not reported)".into()
    };
    let session_tokens = if tokens_known(session) {
        session.tokens.total().to_string()
    } else {
        "?".into()
    };
    Line::new(
        format!(
            "── {turn_tokens} · {} this turn │ session {session_tokens} tokens · {} │ {}",
            money(turn),
            money(session),
            info.label
        ),
        Look::Dim,
    )
}

fn show_approval(ctx: &Ctx, pending: &PendingApproval) {
    let mut lines =
        vec![Line::new("? ", Look::Warn).and(format!("{}?", pending.request.summary), Look::Bold)];
    let input = pending.call.input.to_value();
    let text = |key: &str| input.get(key).and_then(|v| v.as_str());
    if let (Some(old), Some(new)) = (text("old_string"), text("new_string")) {
        lines.extend(
            old.lines()
                .map(|l| Line::new(format!("  - {l}"), Look::Bad)),
        );
        lines.extend(
            new.lines()
                .map(|l| Line::new(format!("  + {l}"), Look::Good)),
        );
    } else if let Some(content) = text("content") {
        let total = content.lines().count();
        lines.extend(
            content
                .lines()
                .take(8)
                .map(|l| Line::new(format!("  + {l}"), Look::Good)),
        );
        if total > 8 {
            lines.push(Line::new(
                format!("  … {} more lines", total - 8),
                Look::Dim,
            ));
        }
    }
    ctx.screen().lines(&lines);
}

fn show_history(screen: &Arc<Mutex<Screen>>, snapshot: &LoopSnapshot) {
    let mut lines = vec![Line::new(
        format!(
            "resumed session {} ({} items)",
            snapshot.session_id,
            snapshot.transcript.len()
        ),
        Look::Accent,
    )];
    for item in snapshot.transcript.iter().rev().take(6).rev() {
        let who = match item.kind {
            ItemKind::User => "> ",
            ItemKind::Assistant => "  ",
            _ => continue,
        };
        // Messages queued together are one item: one line each.
        for text in crate::view::message_texts(item) {
            lines.push(Line::new(format!("{who}{}", shorten(&text, 70)), Look::Dim));
        }
    }
    if snapshot.pending_approvals().next().is_some() {
        lines.push(Line::new("(an approval is waiting)", Look::Warn));
    }
    screen
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .lines(&lines);
}
