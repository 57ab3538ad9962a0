//! Ending a child process together with everything it started.
//!
//! Killing only the direct child is not enough: `sh -c 'make test'` leaves
//! `make` and its children running, and `npx some-mcp-server` leaves the
//! real server (a grandchild) holding ports and files. So a tool that spawns
//! processes starts each as the leader of a new process group (tokio's
//! `Command::process_group(0)`) and ends it through this one type, which
//! signals the whole group. The shell tool and MCP stdio servers use it;
//! tools of your own that spawn processes should too.
//!
//! A [`ProcessGroup`] kills its group when dropped, so an abandoned call (a
//! dropped future, a loop that gave up) leaves nothing behind. A process
//! that deliberately leaves the group (`setsid`, a daemon that
//! double-forks) is out of reach. Off Unix this is a no-op: there the
//! direct child is all that can be killed, with `kill_on_drop`.

/// The process group led by a spawned child; see the module docs.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use agentkit_tools_core::ProcessGroup;
/// use std::time::{Duration, Instant};
///
/// let mut command = tokio::process::Command::new("sh");
/// command.arg("-c").arg("sleep 60 & sleep 60");
/// #[cfg(unix)]
/// command.process_group(0);
/// let started = Instant::now();
/// let mut child = command.spawn()?;
/// let group = ProcessGroup::led_by(child.id());
/// group.kill(); // both sleeps, not only the shell
/// child.wait().await?;
/// assert!(started.elapsed() < Duration::from_secs(30));
/// # Ok::<(), std::io::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct ProcessGroup {
    #[cfg_attr(not(unix), allow(dead_code))]
    id: Option<u32>,
}

impl ProcessGroup {
    /// The group led by the child with this process id, which must have been
    /// spawned as a group leader (`process_group(0)`). `None` (a child that
    /// was already reaped) makes a group that signals nothing.
    pub fn led_by(pid: Option<u32>) -> Self {
        Self { id: pid }
    }

    /// The group's id (the leader's process id).
    pub fn id(&self) -> Option<u32> {
        self.id
    }

    /// Asks every process of the group to stop (SIGTERM).
    pub fn terminate(&self) {
        #[cfg(unix)]
        self.signal(rustix::process::Signal::TERM);
    }

    /// Kills every process of the group (SIGKILL). A group that is already
    /// gone is not an error.
    pub fn kill(&self) {
        #[cfg(unix)]
        self.signal(rustix::process::Signal::KILL);
    }

    #[cfg(unix)]
    fn signal(&self, signal: rustix::process::Signal) {
        let Some(pid) = self
            .id
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw)
        else {
            return;
        };
        match rustix::process::kill_process_group(pid, signal) {
            Ok(()) | Err(rustix::io::Errno::SRCH) => {}
            Err(err) => {
                tracing::warn!(pgid = pid.as_raw_pid(), %err, "cannot signal process group")
            }
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    /// Running (a zombie waiting for init to reap it counts as dead).
    fn alive(pid: i32) -> bool {
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            return !stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z'));
        }
        let pid = rustix::process::Pid::from_raw(pid).unwrap();
        rustix::process::test_kill_process(pid).is_ok()
    }

    #[test]
    fn dropping_the_group_kills_grandchildren_too() {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("sleep 60 & echo $!; wait")
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let grandchild: i32 = line.trim().parse().unwrap();
        assert!(alive(grandchild));
        let group = ProcessGroup::led_by(Some(child.id()));
        assert_eq!(group.id(), Some(child.id()));
        drop(group);
        child.wait().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        // The grandchild is reparented and reaped by init; wait for it to go.
        while alive(grandchild) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(grandchild), "the background sleep survived");
        // Signalling a group that is gone is fine.
        ProcessGroup::led_by(Some(child.id())).terminate();
        ProcessGroup::led_by(None).kill();
    }
}
