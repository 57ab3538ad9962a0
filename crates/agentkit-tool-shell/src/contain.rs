//! Finding every process a command started, also those that left its
//! process group, and killing them when the call ends or the host dies.
//!
//! The command's process group catches `sleep 60 &` but not `setsid sleep
//! 60 &`, a double fork, or a daemon: those start a new session and are out
//! of the group's reach. What they all keep is their environment. So every
//! call runs with a unique `AGENTKIT_SHELL_CALL` variable, inherited by
//! every process it starts, and when the call ends (exit, timeout, output
//! limit, cancellation, or its future dropped) [`sweep`] scans `/proc` and
//! SIGKILLs every process carrying that exact value, round after round until
//! none is left (a process forking while it is killed leaves children that
//! the next round finds).
//!
//! When the host itself is SIGKILLed no code of it runs. For that case the
//! first call starts a watchdog: a small `sh` loop in its own process group
//! whose standard input is a pipe only the host holds. When the host dies,
//! however it dies, the kernel closes that pipe, the watchdog's `read`
//! returns, and it kills every process carrying any of the host's call tags
//! (with one `grep` over `/proc/*/environ`) and exits.
//!
//! A process that clears its environment (`env -i`) *and* leaves the group
//! carries no tag. For that case a host can make itself a child subreaper
//! ([`adopt_orphans`](crate::adopt_orphans)): an orphaned descendant of any
//! command is then re-parented to the host instead of to init, and the
//! sweep also kills the host's children that started after the call's shell
//! and live in another session (the host's own children never leave its
//! session; an escaped command did, with `setsid`). It reaps them too, as a
//! subreaper must. This is process-wide, so it is the host's choice, not
//! the tool's: a subreaper inherits every orphan of every child.
//!
//! Why not the alternatives: a subreaper or `PR_SET_PDEATHSIG` set in the
//! child would need `unsafe` `pre_exec` (forbidden here); a cgroup per call
//! needs a delegated cgroup tree that an ordinary user session does not
//! give to a terminal program.
//!
//! Limits (documented in the book's reliability chapter): without
//! `adopt_orphans`, a process that clears its environment and leaves the
//! group, or makes itself unreadable (`prctl(PR_SET_DUMPABLE, 0)`, a
//! set-uid program), is not found; with it, an escaped process of one call
//! may be killed by the sweep of another call that runs at the same time
//! and ends first. The Landlock sandbox still bounds what it can write.
//! Off Linux (no `/proc`), only the process group is killed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The variable that marks a call's processes.
pub(crate) const TAG_VAR: &str = "AGENTKIT_SHELL_CALL";

/// How many kill rounds a sweep runs at most (a fork bomb outpacing them is
/// still bounded by the process group kill and the watchdog).
const MAX_ROUNDS: u32 = 64;

/// The value of [`TAG_VAR`] for one call: `<host nonce>-<counter>`.
#[derive(Clone, Debug)]
pub(crate) struct CallTag(String);

impl CallTag {
    /// A tag no other call of this host, and no other host, uses.
    pub(crate) fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let call = NEXT.fetch_add(1, Ordering::Relaxed);
        Self(format!("{}{call}", host_prefix()))
    }

    /// The variable's value.
    pub(crate) fn value(&self) -> &str {
        &self.0
    }
}

/// `<pid>x<random>-`: what every tag of this host starts with.
fn host_prefix() -> &'static str {
    static PREFIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PREFIX.get_or_init(|| {
        use std::hash::BuildHasher;
        // std seeds every RandomState from the OS's random source.
        let random = std::collections::hash_map::RandomState::new().hash_one(std::process::id());
        format!("{}x{random:016x}-", std::process::id())
    })
}

/// Kills every process tagged with `tag` and, if the host adopts orphans
/// and the call's shell `root` is known, every orphan of the call the host
/// adopted (then reaps them); returns how many were signalled. Blocks
/// (reads `/proc`); call it off the async threads.
pub(crate) fn sweep(tag: &CallTag, root: Option<Root>) -> usize {
    let root = root.filter(|_| crate::host::adopts_orphans());
    let needle = format!("{TAG_VAR}={}", tag.value());
    let mut killed = 0;
    // A process in the middle of `execve` shows an empty environment for a
    // few microseconds (its new memory is in place, its variables not yet):
    // a sweep ends only after two empty scans some milliseconds apart.
    let mut empty_scans = 0;
    for round in 0..MAX_ROUNDS {
        let mut found = tagged(needle.as_bytes());
        if let Some(root) = root {
            found.extend(
                adopted_orphans(root)
                    .into_iter()
                    .filter(|o| o.live)
                    .map(|o| o.pid),
            );
        }
        if found.is_empty() {
            empty_scans += 1;
            if empty_scans == 2 {
                break;
            }
        } else {
            empty_scans = 0;
        }
        for pid in found {
            if kill(pid) {
                killed += 1;
            }
        }
        // Let the killed die, so that their orphans show up, not themselves.
        std::thread::sleep(Duration::from_millis(5 + 2 * u64::from(round)));
    }
    if let Some(root) = root {
        reap(root);
    }
    if killed > 0 {
        tracing::debug!(
            killed,
            "killed processes that had left the command's process group"
        );
    }
    killed
}

/// The live processes (zombies have an empty environment) whose
/// environment holds exactly `needle` (`NAME=value`).
#[cfg(target_os = "linux")]
fn tagged(needle: &[u8]) -> Vec<u32> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|var| var == needle))
        })
        .collect()
}

#[cfg(not(target_os = "linux"))]
fn tagged(_needle: &[u8]) -> Vec<u32> {
    Vec::new()
}

/// A child of the host that some command left behind.
struct Orphan {
    pid: u32,
    /// `false` for a zombie (it only needs reaping).
    live: bool,
}

/// The fields of `/proc/<pid>/stat` the sweep needs.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
struct Stat {
    state: char,
    ppid: u32,
    group: u32,
    session: u32,
    /// Clock ticks after boot.
    start: u64,
}

#[cfg(target_os = "linux")]
fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after
    // the last `)`.
    let fields: Vec<&str> = text
        .get(text.rfind(')')? + 1..)?
        .split_whitespace()
        .collect();
    Some(Stat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        group: fields.get(2)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// A call's shell: the leader of its process group, and when it started.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Root {
    pid: u32,
    /// Clock ticks after boot.
    start: u64,
}

impl Root {
    /// The shell `pid`, while it runs (`None` off Linux).
    #[cfg(target_os = "linux")]
    pub(crate) fn of(pid: u32) -> Option<Self> {
        stat(pid).map(|stat| Self {
            pid,
            start: stat.start,
        })
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn of(_pid: u32) -> Option<Self> {
        None
    }
}

/// The host's children, other than the call's shell and started after it,
/// that live in another session than the host or in the call's process
/// group: descendants of the command, re-parented to the host (a
/// subreaper) after their parent died.
#[cfg(target_os = "linux")]
fn adopted_orphans(root: Root) -> Vec<Orphan> {
    let me = std::process::id();
    let Some(mine) = stat(me) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, stat(pid)?)))
        .filter(|(pid, stat)| {
            *pid != root.pid
                && stat.ppid == me
                && stat.start >= root.start
                && (stat.session != mine.session || stat.group == root.pid)
        })
        .map(|(pid, stat)| Orphan {
            pid,
            live: stat.state != 'Z',
        })
        .collect()
}

#[cfg(not(target_os = "linux"))]
fn adopted_orphans(_root: Root) -> Vec<Orphan> {
    Vec::new()
}

/// Collects the exit status of the adopted orphans that ended (a subreaper
/// that does not leaves zombies). Only those: the host's other children
/// belong to whoever spawned them.
#[cfg(unix)]
fn reap(root: Root) {
    use rustix::process::{Pid, WaitOptions, waitpid};
    // The killed may take a moment to become zombies.
    for _ in 0..50 {
        let orphans = adopted_orphans(root);
        if orphans.is_empty() {
            return;
        }
        for orphan in orphans.iter().filter(|o| !o.live) {
            if let Some(pid) = i32::try_from(orphan.pid).ok().and_then(Pid::from_raw) {
                let _ = waitpid(Some(pid), WaitOptions::NOHANG);
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(not(unix))]
fn reap(_root: Root) {}

#[cfg(unix)]
fn kill(pid: u32) -> bool {
    i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .is_some_and(|pid| {
            rustix::process::kill_process(pid, rustix::process::Signal::KILL).is_ok()
        })
}

#[cfg(not(unix))]
fn kill(_pid: u32) -> bool {
    false
}

/// Sweeps `tag` when dropped unless [`disarm`](SweepOnDrop::disarm)ed: an
/// abandoned call (its future dropped) cleans up from a short-lived thread.
pub(crate) struct SweepOnDrop(Option<CallTag>, Option<Root>);

impl SweepOnDrop {
    /// Sweeps `tag` and the orphans of the call's shell `root` (a pid).
    pub(crate) fn new(tag: CallTag, root: Option<u32>) -> Self {
        Self(Some(tag), root.and_then(Root::of))
    }

    /// Sweeps now, off the async threads, and no more on drop.
    pub(crate) async fn sweep_now(mut self) {
        let root = self.1;
        if let Some(tag) = self.0.take() {
            let _ = tokio::task::spawn_blocking(move || sweep(&tag, root)).await;
        }
    }
}

impl Drop for SweepOnDrop {
    fn drop(&mut self) {
        let root = self.1;
        if let Some(tag) = self.0.take() {
            let _ = std::thread::Builder::new()
                .name("agentkit-shell-sweep".into())
                .spawn(move || sweep(&tag, root));
        }
    }
}

/// The watchdog's script: wait for the host's pipe to close, then kill
/// every process carrying one of the host's tags (`$1` is the prefix).
#[cfg(target_os = "linux")]
const WATCHDOG_SCRIPT: &str = r#"read -r _ 2>/dev/null
n=0
empty=0
while [ "$n" -lt 64 ] && [ "$empty" -lt 2 ]; do
  pids=$(grep -lsaF "$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3)
  if [ -z "$pids" ]; then empty=$((empty+1)); else empty=0; kill -9 $pids 2>/dev/null; fi
  sleep 0.05 2>/dev/null || sleep 1
  n=$((n+1))
done"#;

/// Makes sure the host's watchdog runs (see the module docs); started once,
/// restarted if something killed it. Failing to start it is logged, not
/// fatal: the sweep at the end of each call still runs.
#[cfg(target_os = "linux")]
pub(crate) fn ensure_watchdog() {
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command, Stdio};
    use std::sync::Mutex;
    static WATCHDOG: Mutex<Option<Child>> = Mutex::new(None);
    let mut slot = WATCHDOG.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(child) = slot.as_mut()
        && matches!(child.try_wait(), Ok(None))
    {
        return;
    }
    let spawned = Command::new("sh")
        .arg("-c")
        .arg(WATCHDOG_SCRIPT)
        .arg("agentkit-shell-watchdog")
        .arg(format!("{TAG_VAR}={}", host_prefix()))
        .env_remove(TAG_VAR)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    match spawned {
        // Never waited for and never written to: it lives as long as the
        // host holds its stdin, which is until the host is gone.
        Ok(child) => *slot = Some(child),
        Err(err) => tracing::warn!(%err, "cannot start the shell tool's watchdog"),
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn ensure_watchdog() {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn tags_are_unique_and_share_the_host_prefix() {
        let (a, b) = (CallTag::new(), CallTag::new());
        assert_ne!(a.value(), b.value());
        assert!(a.value().starts_with(host_prefix()));
        assert!(host_prefix().starts_with(&std::process::id().to_string()));
    }

    #[test]
    fn a_sweep_kills_a_tagged_process_and_spares_an_untagged_one() {
        let tag = CallTag::new();
        let mut tagged = std::process::Command::new("sleep")
            .arg("100")
            .env(TAG_VAR, tag.value())
            .spawn()
            .unwrap();
        let mut other = std::process::Command::new("sleep")
            .arg("100")
            .env(TAG_VAR, format!("{}-other", tag.value()))
            .spawn()
            .unwrap();
        // The environment is readable once the exec happened.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let mut killed = 0;
        while killed == 0 && std::time::Instant::now() < deadline {
            killed = sweep(&tag, None);
        }
        assert_eq!(killed, 1);
        assert!(
            tagged.wait().unwrap().code().is_none(),
            "killed by a signal"
        );
        assert!(other.try_wait().unwrap().is_none(), "the other tag was hit");
        other.kill().unwrap();
        other.wait().unwrap();
    }
}
