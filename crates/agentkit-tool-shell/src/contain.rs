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
//! Why not the alternatives: a child subreaper is a property of the process
//! that sets it and is not inherited, so it would have to be set in the
//! child between `fork` and `exec` (which needs `unsafe` `pre_exec`, which
//! this workspace forbids) or on the host itself (which would then inherit
//! every orphan of every child, and still lose them all when it is killed);
//! `PR_SET_PDEATHSIG` has the same problem and fires when the *thread* that
//! forked exits; a cgroup per call needs a delegated cgroup tree that an
//! ordinary user session does not give to a terminal program.
//!
//! Limits (documented in the book's reliability chapter): a process that
//! clears its environment (`env -i`) *and* leaves the group, or makes
//! itself unreadable (`prctl(PR_SET_DUMPABLE, 0)`, a set-uid program), is
//! not found; the Landlock sandbox still bounds what it can write. Off
//! Linux (no `/proc`), only the process group is killed.

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

/// Kills every process tagged with `tag`; returns how many were signalled.
/// Blocks (reads `/proc`); call it off the async threads.
pub(crate) fn sweep(tag: &CallTag) -> usize {
    let needle = format!("{TAG_VAR}={}", tag.value());
    let mut killed = 0;
    // A process in the middle of `execve` shows an empty environment for a
    // few microseconds (its new memory is in place, its variables not yet):
    // a sweep ends only after two empty scans some milliseconds apart.
    let mut empty_scans = 0;
    for round in 0..MAX_ROUNDS {
        let found = tagged(needle.as_bytes());
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
pub(crate) struct SweepOnDrop(Option<CallTag>);

impl SweepOnDrop {
    pub(crate) fn new(tag: CallTag) -> Self {
        Self(Some(tag))
    }

    /// Sweeps now, off the async threads, and no more on drop.
    pub(crate) async fn sweep_now(mut self) {
        if let Some(tag) = self.0.take() {
            let _ = tokio::task::spawn_blocking(move || sweep(&tag)).await;
        }
    }
}

impl Drop for SweepOnDrop {
    fn drop(&mut self) {
        if let Some(tag) = self.0.take() {
            let _ = std::thread::Builder::new()
                .name("agentkit-shell-sweep".into())
                .spawn(move || sweep(&tag));
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
            killed = sweep(&tag);
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
