//! `coding-agent`: an interactive coding agent in the terminal, built from
//! agentkit's crates.
//!
//! It works in a directory with the filesystem tools and `shell_exec`, plus
//! the tools of any MCP servers configured, over the provider the
//! environment names. With no provider configured it runs an offline demo:
//! a scripted model fixes a failing test in a scratch copy of a bundled
//! sample project, with the real tools.
//!
//! While the agent works the input line stays live: Enter queues a steering
//! message, a leading `!` makes it urgent, a leading `+` keeps it as a
//! follow-up. Ctrl-C cancels the turn; Ctrl-C twice or Ctrl-D quits.
//!
//! `coding-agent exec PROMPT` runs one turn for scripts instead (see
//! [`exec`]), and `--acp` serves the agent to editors.
//!
//! Run it with `cargo run -p coding-agent` (`-- --help` for the options).

mod acp;
mod app;
mod args;
mod buffers;
mod context;
mod demo;
mod diagnose;
mod exec;
mod input;
mod mcp;
mod policy;
mod probe;
mod provider;
mod screen;
mod sessions;
mod todo;
mod view;

use crate::provider::ModelInfo;
use crate::screen::{Line, Look, Screen};
use crate::sessions::Sessions;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

/// Leaves raw mode when dropped, and on panic.
struct RawMode;

impl RawMode {
    fn enter() -> std::io::Result<Self> {
        crossterm::terminal::enable_raw_mode()?;
        let _ = crossterm::execute!(std::io::stdout(), crossterm::event::EnableBracketedPaste);
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            leave_raw_mode();
            hook(info);
        }));
        Ok(Self)
    }
}

fn leave_raw_mode() {
    let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableBracketedPaste);
    let _ = crossterm::terminal::disable_raw_mode();
}

impl Drop for RawMode {
    fn drop(&mut self) {
        leave_raw_mode();
    }
}

fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("coding-agent: {message}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    // What the shell tool cannot set up for itself (the book's reliability
    // chapter): adopt the commands' orphans, so that one that cleared its
    // environment and left its session is still killed, and hide this
    // process's environment (the keys) from /proc readers. Best effort.
    #[cfg(target_os = "linux")]
    {
        let _ = agentkit_tool_shell::adopt_orphans();
        let _ = agentkit_tool_shell::hide_host_environment();
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => return fail(format!("cannot start the async runtime: {error}")),
    };
    let code = runtime.block_on(run());
    // Standard input may be read by a blocking thread that waits for a line
    // that never comes; do not wait for it.
    runtime.shutdown_background();
    code
}

/// Connects the MCP servers of `--mcp` (or the default config file, when
/// it exists), telling `report` how each went. `roots` are offered to the
/// servers as the client's roots (MCP `roots`): the workspace, or over ACP
/// the open sessions' directories.
async fn connect_mcp(
    args: &args::Args,
    roots: Option<Vec<agentkit_mcp::McpRoot>>,
    report: impl Fn(String),
) -> Result<Option<agentkit_mcp::McpServerManager>, String> {
    let Some(path) = args.mcp.clone().or_else(mcp::default_path) else {
        return Ok(None);
    };
    let servers = mcp::read(&path).map_err(|error| error.to_string())?;
    let (manager, lines) = mcp::connect(servers, roots)
        .await
        .map_err(|error| error.to_string())?;
    lines.into_iter().for_each(report);
    Ok(Some(manager))
}

/// `--acp`: the agent over ACP on stdio, with the provider of the
/// environment. Nothing but the protocol goes to standard output.
async fn serve_acp(
    args: &args::Args,
    open_store: impl FnOnce() -> Result<Sessions, sessions::SessionError>,
) -> ExitCode {
    let (model, info) = match provider::from_env().await {
        Ok(Some(provider)) => provider,
        Ok(None) => {
            return fail(
                "--acp needs a provider: set OPENAI_API_KEY, ANTHROPIC_API_KEY or \
                 OPENAI_BASE_URL (see --help)",
            );
        }
        Err(error) => return fail(error),
    };
    let store = match open_store() {
        Ok(store) => store,
        Err(error) => return fail(error),
    };
    // The roots start empty; each session adds its directory (acp.rs).
    let mcp = match connect_mcp(args, Some(Vec::new()), |line| {
        eprintln!("coding-agent: {line}")
    })
    .await
    {
        Ok(mcp) => mcp,
        Err(error) => return fail(error),
    };
    let window = context::window_for(&info.model, info.window);
    let served = acp::serve(model, window, &store, mcp.clone()).await;
    if let Some(manager) = &mcp {
        manager.disconnect_all().await;
    }
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => fail(error),
    }
}

/// `exec`'s options: the prompt (argument, else standard input; the demo's
/// task when the demo runs without one) and the schema file.
fn exec_setup(
    args: &args::Args,
    workspace: std::path::PathBuf,
    sessions: Sessions,
    demo: bool,
) -> Result<exec::Exec, String> {
    let prompt = match args.prompt.as_deref() {
        Some(text) if text != "-" => text.to_owned(),
        _ if std::io::stdin().is_terminal() => String::new(),
        _ => {
            let mut text = String::new();
            if let Err(error) = std::io::Read::read_to_string(&mut std::io::stdin(), &mut text) {
                return Err(format!("cannot read the prompt from stdin: {error}"));
            }
            text
        }
    };
    let prompt = match prompt.trim() {
        "" if demo => demo::TASK.to_owned(),
        "" => {
            return Err("exec needs a prompt: an argument, or text on standard input".into());
        }
        text => text.to_owned(),
    };
    let output_schema = args
        .output_schema
        .as_deref()
        .map(exec::read_schema)
        .transpose()?;
    Ok(exec::Exec {
        workspace,
        prompt,
        approval: if args.yes {
            policy::ApprovalMode::FullAuto
        } else {
            args.approval
        },
        json: args.json,
        output_schema,
        max_steps: args.max_steps.unwrap_or(40),
        window: context::DEMO_WINDOW,
        base_url: None,
        sessions,
        mcp: None,
        observer: None,
    })
}

async fn run() -> ExitCode {
    let args = match args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => return fail(message),
    };
    if args.help {
        println!("{}", args::USAGE);
        return ExitCode::SUCCESS;
    }
    let state_dir = args.state_dir.clone().unwrap_or_else(Sessions::default_dir);
    let open_store = || Sessions::open(&state_dir);
    if args.list {
        let listed = match open_store() {
            Ok(store) => store.list().await,
            Err(error) => Err(error),
        };
        return match listed {
            Ok(sessions) if sessions.is_empty() => {
                println!("no saved sessions in {}", state_dir.display());
                ExitCode::SUCCESS
            }
            Ok(sessions) => {
                for line in sessions::list_lines(&sessions, std::time::SystemTime::now()) {
                    println!("{line}");
                }
                ExitCode::SUCCESS
            }
            Err(error) => fail(error),
        };
    }

    if args.acp {
        return serve_acp(&args, open_store).await;
    }

    let provider = if args.demo {
        None
    } else {
        match provider::from_env().await {
            Ok(provider) => provider,
            Err(error) => return fail(error),
        }
    };
    let demo_dir = if provider.is_none() {
        match demo::scratch_project() {
            Ok(dir) => Some(dir),
            Err(error) => return fail(format!("cannot create the demo's scratch copy: {error}")),
        }
    } else {
        None
    };

    // The demo keeps its session in memory: it is not saved.
    let store = match &demo_dir {
        Some(_) => Sessions::in_memory(),
        None => open_store(),
    };
    let store = match store {
        Ok(store) => store,
        Err(error) => return fail(error),
    };
    let current = || {
        args.workspace
            .clone()
            .unwrap_or_else(|| std::env::current_dir().unwrap_or_else(|_| ".".into()))
    };
    let (workspace, resume) = match (&args.resume, &demo_dir) {
        (Some(_), Some(_)) => {
            return fail("--resume needs a provider (the offline demo is not saved)");
        }
        (Some(id), None) => match store.find(id.as_deref()).await {
            // The session goes on in its own workspace.
            Ok((info, workspace)) => (workspace.unwrap_or_else(current), Some(info.id)),
            Err(error) => return fail(error),
        },
        (None, Some(dir)) => (dir.clone(), None),
        (None, None) => (current(), None),
    };
    let workspace = match std::fs::canonicalize(&workspace) {
        Ok(path) if path.is_dir() => path,
        _ => return fail(format!("{} is not a directory", workspace.display())),
    };

    if args.exec {
        let mut exec = match exec_setup(&args, workspace, store, demo_dir.is_some()) {
            Ok(exec) => exec,
            Err(error) => return fail(error),
        };
        exec.mcp = match connect_mcp(&args, Some(mcp::workspace_roots(&exec.workspace)), |line| {
            eprintln!("coding-agent: {line}")
        })
        .await
        {
            Ok(mcp) => mcp,
            Err(error) => return fail(error),
        };
        let outcome = match provider {
            Some((model, info)) => {
                let window = context::window_for(&info.model, info.window);
                let base_url = info.base_url.clone();
                exec::run(
                    model,
                    exec::Exec {
                        window,
                        base_url,
                        ..exec
                    },
                )
                .await
            }
            None => {
                let model = demo::model();
                let exec = exec::Exec {
                    observer: Some(Arc::new(demo::Director::new(model.clone()))),
                    window: context::DEMO_WINDOW,
                    ..exec
                };
                exec::run(model, exec).await
            }
        };
        return match outcome {
            Ok(outcome) => ExitCode::from(outcome.exit_code()),
            Err(error) => fail(error),
        };
    }

    let tty = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let screen = Arc::new(Mutex::new(Screen::new(tty)));
    let say = |line: Line| screen.lock().unwrap_or_else(|e| e.into_inner()).line(line);

    let mcp = match connect_mcp(&args, Some(mcp::workspace_roots(&workspace)), |line| {
        say(Line::new(line, Look::Dim))
    })
    .await
    {
        Ok(mcp) => mcp,
        Err(error) => return fail(error),
    };

    let _raw = if tty {
        match RawMode::enter() {
            Ok(raw) => Some(raw),
            Err(error) => return fail(format!("cannot use the terminal: {error}")),
        }
    } else {
        None
    };

    let setup = |info: ModelInfo| app::Setup {
        workspace: workspace.clone(),
        yes: args.yes,
        prompt: args.prompt.clone(),
        one_shot: args.prompt.is_some() && !tty,
        max_steps: args.max_steps.unwrap_or(40),
        info,
        sessions: store.clone(),
        resume: resume.clone(),
        mcp: mcp.clone(),
        observer: None,
        screen: screen.clone(),
    };
    let result = match provider {
        Some((provider, info)) => {
            say(Line::new("coding-agent", Look::Bold).and(
                format!(
                    " · {} · {} · /help for keys",
                    info.label,
                    workspace.display()
                ),
                Look::Dim,
            ));
            app::run(provider, setup(info)).await
        }
        None => {
            say(Line::new("offline demo", Look::Warn).and(
                ": no provider configured, so a scripted model plays the agent, with real tools.",
                Look::Plain,
            ));
            say(Line::new(
                "Set OPENAI_API_KEY, ANTHROPIC_API_KEY or OPENAI_BASE_URL to use a real model (--help).",
                Look::Dim,
            ));
            say(Line::new(
                format!(
                    "Working on a scratch copy of the sample project: {}",
                    workspace.display()
                ),
                Look::Dim,
            ));
            if !demo::python_available() {
                say(Line::new(
                    "python3 was not found: the demo runs the sample project's tests with it, \
                     so those runs will fail.",
                    Look::Bad,
                ));
            }
            let model = demo::model();
            let mut setup = setup(ModelInfo {
                label: "offline demo (scripted; tokens estimated)".into(),
                price: Some((0.0, 0.0)),
                model: "offline-demo".into(),
                window: Some(context::DEMO_WINDOW),
                base_url: None,
            });
            setup.observer = Some(Arc::new(demo::Director::new(model.clone())));
            setup.prompt = Some(setup.prompt.unwrap_or_else(|| demo::TASK.into()));
            app::run(model, setup).await
        }
    };
    drop(_raw);
    match result {
        Ok(summary) => {
            if let Some(dir) = &demo_dir {
                let fixed = demo::is_fixed(dir);
                if fixed {
                    println!(
                        "demo finished: calc.py is fixed; the scratch copy is in {}",
                        dir.display()
                    );
                } else {
                    println!(
                        "demo finished without the fix; the scratch copy is in {}",
                        dir.display()
                    );
                }
                // Without a terminal and with --yes (CI), the demo must
                // have done its job.
                if !tty && args.yes && (!fixed || summary.turns == 0) {
                    return ExitCode::FAILURE;
                }
            }
            // `--prompt` without a terminal: success only for a turn that
            // completed (`exec` has the finer exit codes).
            let completed = summary.last_finish == Some(agentkit_core::FinishReason::Completed);
            if !tty && args.prompt.is_some() && (summary.errors > 0 || !completed) {
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Err(error) => fail(error),
    }
}
