//! Which tool call an `elicitation/create` belongs to.
//!
//! Each call in flight whose [`ToolContext`](agentkit_tools_core::ToolContext)
//! can ask its host is listed here while it runs, under its progress token
//! once rmcp has given it one. A call is listed *before* its request is
//! sent: a server may ask at once, and its question must not beat the
//! listing (it would go to the handler, or be declined). A server's
//! elicitation goes to the call its `_meta.progressToken` names, else to
//! the only call listed, else nowhere (the manager's handler, then a
//! decline; see the `elicitation` module).
//!
//! Each listed call also counts its questions that are open: the call's
//! deadline ([`deadline_outside_questions`]) measures the server, so its
//! clock stops while the user answers and runs on after.

use agentkit_core::ToolCallId;
use agentkit_tools_core::QuestionSink;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// One listed call: its entry number, its progress token (once sent), the
/// call, where its questions go and how many are open.
type Asker = (u64, Option<String>, ToolCallId, QuestionSink, OpenQuestions);

/// How many of a call's questions are open, watched by its deadline.
pub(crate) type OpenQuestions = Arc<watch::Sender<u32>>;

/// Counts one open question of a call while it lives.
pub(crate) struct Asking(OpenQuestions);

impl Asking {
    pub(crate) fn new(open: OpenQuestions) -> Self {
        open.send_modify(|n| *n += 1);
        Self(open)
    }
}

impl Drop for Asking {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// Resolves once `deadline` has passed with none of the call's questions
/// open (`open`, when the call can ask): the time its user spends
/// answering does not count.
pub(crate) async fn deadline_outside_questions(
    deadline: Duration,
    open: Option<watch::Receiver<u32>>,
) {
    let Some(mut open) = open else {
        return tokio::time::sleep(deadline).await;
    };
    let mut left = deadline;
    loop {
        let started = tokio::time::Instant::now();
        tokio::select! {
            () = tokio::time::sleep(left) => return,
            asked = async { open.wait_for(|n| *n > 0).await.is_ok() } => {
                if !asked {
                    // Nobody can ask any more: the rest of the time runs.
                    return tokio::time::sleep(left.saturating_sub(started.elapsed())).await;
                }
            }
        }
        left = left.saturating_sub(started.elapsed());
        // Stopped while a question is open.
        let _closed = open.wait_for(|n| *n == 0).await.is_err();
    }
}

/// The calls in flight on one connection that can ask their host.
#[derive(Default)]
pub(crate) struct CallAskers {
    list: Mutex<Vec<Asker>>,
    next: AtomicU64,
}

impl CallAskers {
    /// Lists a call until the guard drops; its token is set once its
    /// request is sent ([`AskerGuard::sent_as`]).
    pub(crate) fn enter(&self, call_id: ToolCallId, sink: QuestionSink) -> AskerGuard<'_> {
        let entry = self.next.fetch_add(1, Ordering::Relaxed);
        let open = Arc::new(watch::Sender::new(0));
        self.list
            .lock()
            .expect("askers lock")
            .push((entry, None, call_id, sink, open.clone()));
        AskerGuard {
            askers: self,
            entry,
            open,
        }
    }

    /// The call a request with this progress token (if any) belongs to:
    /// its id, where its questions go and its count of open ones.
    pub(crate) fn find(
        &self,
        token: Option<&str>,
    ) -> Option<(ToolCallId, QuestionSink, OpenQuestions)> {
        let askers = self.list.lock().expect("askers lock");
        let found = match token {
            Some(token) => askers.iter().find(|a| a.1.as_deref() == Some(token)),
            None => None,
        };
        let found = found.or(match askers.as_slice() {
            [only] => Some(only),
            _ => None,
        })?;
        Some((found.2.clone(), found.3.clone(), found.4.clone()))
    }
}

/// Keeps a call listed while it lives.
pub(crate) struct AskerGuard<'a> {
    askers: &'a CallAskers,
    entry: u64,
    open: OpenQuestions,
}

impl AskerGuard<'_> {
    /// Watches how many of the call's questions are open.
    pub(crate) fn open_questions(&self) -> watch::Receiver<u32> {
        self.open.subscribe()
    }

    /// The call's request went out with progress token `token`.
    pub(crate) fn sent_as(&self, token: String) {
        let mut askers = self.askers.list.lock().expect("askers lock");
        if let Some(asker) = askers.iter_mut().find(|a| a.0 == self.entry) {
            asker.1 = Some(token);
        }
    }
}

impl Drop for AskerGuard<'_> {
    fn drop(&mut self) {
        let mut askers = self.askers.list.lock().expect("askers lock");
        if let Some(at) = askers.iter().position(|a| a.0 == self.entry) {
            askers.swap_remove(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_picks_its_call_and_without_one_only_a_lone_call_is_picked() {
        let askers = CallAskers::default();
        let sink = QuestionSink::default;
        let a = askers.enter(ToolCallId::new("a"), sink());
        // Listed before its request is sent: a question that comes at once
        // still finds it.
        assert_eq!(askers.find(Some("1")).unwrap().0.as_str(), "a");
        a.sent_as("1".into());
        assert_eq!(askers.find(None).unwrap().0.as_str(), "a");
        assert_eq!(askers.find(Some("9")).unwrap().0.as_str(), "a");
        let b = askers.enter(ToolCallId::new("b"), sink());
        b.sent_as("2".into());
        assert_eq!(askers.find(Some("2")).unwrap().0.as_str(), "b");
        assert_eq!(askers.find(Some("1")).unwrap().0.as_str(), "a");
        assert!(
            askers.find(None).is_none(),
            "two calls, no token: ambiguous"
        );
        drop(a);
        assert_eq!(askers.find(None).unwrap().0.as_str(), "b");
        drop(b);
        assert!(askers.find(Some("2")).is_none());
    }

    /// On paused time: a 10 s deadline, a question open from 3 s to 23 s
    /// and another from 25 s to 26 s: the deadline passes at 31 s.
    #[tokio::test(start_paused = true)]
    async fn the_deadline_does_not_count_open_questions() {
        let askers = CallAskers::default();
        let call = askers.enter(ToolCallId::new("a"), QuestionSink::default());
        let open = askers.find(None).unwrap().2;
        let start = tokio::time::Instant::now();
        let deadline = tokio::spawn(deadline_outside_questions(
            Duration::from_secs(10),
            Some(call.open_questions()),
        ));
        let at = |secs| tokio::time::sleep_until(start + Duration::from_secs(secs));
        at(3).await;
        let first = Asking::new(open.clone());
        at(23).await;
        drop(first);
        at(25).await;
        let second = Asking::new(open.clone());
        at(26).await;
        drop(second);
        at(30).await;
        assert!(!deadline.is_finished(), "1 s of the deadline is left");
        deadline.await.unwrap();
        assert_eq!(start.elapsed(), Duration::from_secs(31));
    }

    #[tokio::test(start_paused = true)]
    async fn without_questions_the_deadline_is_plain_time() {
        let start = tokio::time::Instant::now();
        deadline_outside_questions(Duration::from_secs(10), None).await;
        assert_eq!(start.elapsed(), Duration::from_secs(10));
    }
}
