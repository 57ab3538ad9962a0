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

use agentkit_core::ToolCallId;
use agentkit_tools_core::QuestionSink;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// One listed call: its entry number, its progress token (once sent), the
/// call and where its questions go.
type Asker = (u64, Option<String>, ToolCallId, QuestionSink);

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
        self.list
            .lock()
            .expect("askers lock")
            .push((entry, None, call_id, sink));
        AskerGuard {
            askers: self,
            entry,
        }
    }

    /// The call a request with this progress token (if any) belongs to.
    pub(crate) fn find(&self, token: Option<&str>) -> Option<(ToolCallId, QuestionSink)> {
        let askers = self.list.lock().expect("askers lock");
        let found = match token {
            Some(token) => askers.iter().find(|a| a.1.as_deref() == Some(token)),
            None => None,
        };
        let found = found.or(match askers.as_slice() {
            [only] => Some(only),
            _ => None,
        })?;
        Some((found.2.clone(), found.3.clone()))
    }
}

/// Keeps a call listed while it lives.
pub(crate) struct AskerGuard<'a> {
    askers: &'a CallAskers,
    entry: u64,
}

impl AskerGuard<'_> {
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
}
