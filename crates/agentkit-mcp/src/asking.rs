//! Which tool call an `elicitation/create` belongs to.
//!
//! Each call in flight whose [`ToolContext`](agentkit_tools_core::ToolContext)
//! can ask its host is listed here under its progress token while it runs.
//! A server's elicitation goes to the call its `_meta.progressToken` names,
//! else to the only call listed, else nowhere (the manager's handler, then
//! a decline; see the `elicitation` module).

use agentkit_core::ToolCallId;
use agentkit_tools_core::QuestionSink;
use std::sync::Mutex;

/// The calls in flight on one connection that can ask their host.
#[derive(Default)]
pub(crate) struct CallAskers(Mutex<Vec<(String, ToolCallId, QuestionSink)>>);

impl CallAskers {
    /// Lists a call under `token` until the guard drops.
    pub(crate) fn enter(
        &self,
        token: String,
        call_id: ToolCallId,
        sink: QuestionSink,
    ) -> AskerGuard<'_> {
        self.0
            .lock()
            .expect("askers lock")
            .push((token.clone(), call_id, sink));
        AskerGuard {
            askers: self,
            token,
        }
    }

    /// The call a request with this progress token (if any) belongs to.
    pub(crate) fn find(&self, token: Option<&str>) -> Option<(ToolCallId, QuestionSink)> {
        let askers = self.0.lock().expect("askers lock");
        let found = match token {
            Some(token) => askers.iter().find(|(t, _, _)| t == token),
            None => None,
        };
        let found = found.or(match askers.as_slice() {
            [only] => Some(only),
            _ => None,
        })?;
        Some((found.1.clone(), found.2.clone()))
    }
}

/// Keeps a call listed while it lives.
pub(crate) struct AskerGuard<'a> {
    askers: &'a CallAskers,
    token: String,
}

impl Drop for AskerGuard<'_> {
    fn drop(&mut self) {
        let mut askers = self.askers.0.lock().expect("askers lock");
        if let Some(at) = askers.iter().position(|(t, _, _)| *t == self.token) {
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
        let a = askers.enter("1".into(), ToolCallId::new("a"), sink());
        assert_eq!(askers.find(None).unwrap().0.as_str(), "a");
        assert_eq!(askers.find(Some("9")).unwrap().0.as_str(), "a");
        let b = askers.enter("2".into(), ToolCallId::new("b"), sink());
        assert_eq!(askers.find(Some("2")).unwrap().0.as_str(), "b");
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
