//! What the host process itself can do for containment, once, at startup.
//!
//! Two gaps of the shell tool cannot be closed from inside a call, because
//! they are properties of the host process, shared by everything in it:
//!
//! - A command that clears its environment (`env -i`) and leaves its
//!   session carries no call tag. [`adopt_orphans`] makes the host a child
//!   subreaper, so such a process, once its parent is gone, becomes the
//!   host's child and the end-of-call sweep finds it by its parent.
//! - A command of the same user can read `/proc/<host pid>/environ`, the
//!   host's keys included, although its own environment was cleaned.
//!   [`hide_host_environment`] makes the host non-dumpable: its `/proc`
//!   entries then belong to root, and only a process with `CAP_SYS_PTRACE`
//!   (root, usually) can read them.
//!
//! Both are opt-in: a library should not change its host behind its back.
//! The coding agent and `agentkit-server` call both at startup.

/// Makes this process a child subreaper (`PR_SET_CHILD_SUBREAPER`): a
/// descendant whose parent dies is re-parented to this process instead of
/// to init. The shell tool's sweep then also kills (and reaps) the commands'
/// processes that cleared their environment and left their session.
///
/// What it costs: the process adopts every orphan of every child, also
/// those of other libraries' children (an MCP server's daemon, say); the
/// shell tool reaps the ones it kills, and ones other code leaves behind
/// stay as zombies until this process exits. Off Linux it returns an
/// [`Unsupported`](std::io::ErrorKind::Unsupported) error.
///
/// ```
/// # #[cfg(target_os = "linux")]
/// agentkit_tool_shell::adopt_orphans().unwrap();
/// ```
pub fn adopt_orphans() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        rustix::process::set_child_subreaper(Some(rustix::process::getpid()))?;
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    Err(std::io::ErrorKind::Unsupported.into())
}

/// Whether this process is a child subreaper, however it became one.
pub(crate) fn adopts_orphans() -> bool {
    #[cfg(target_os = "linux")]
    {
        rustix::process::child_subreaper().is_ok_and(|pid| pid.is_some())
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// Makes this process non-dumpable (`PR_SET_DUMPABLE 0`): its
/// `/proc/<pid>/environ`, `mem`, `maps` and `fd` become unreadable to other
/// processes of the same user, so a command cannot read the host's keys
/// there. The commands themselves stay dumpable (`execve` resets it).
///
/// What it costs: no core dump of the host; a debugger or profiler of the
/// same user (`gdb -p`, `strace -p`, `perf`) cannot attach; a setting a
/// set-uid change would reset must be applied again after it. What it does
/// not do: a command running as root, or with `CAP_SYS_PTRACE`, still reads
/// everything (run the agent as an ordinary user); `/proc/<pid>/cmdline`
/// stays readable (never pass a key as an argument). Off Linux it returns
/// an [`Unsupported`](std::io::ErrorKind::Unsupported) error.
///
/// ```
/// # #[cfg(target_os = "linux")]
/// agentkit_tool_shell::hide_host_environment().unwrap();
/// ```
pub fn hide_host_environment() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)?;
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    Err(std::io::ErrorKind::Unsupported.into())
}
