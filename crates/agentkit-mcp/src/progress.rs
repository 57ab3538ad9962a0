//! Progress notices, routed to the call they belong to, in the order the
//! server sent them.
//!
//! rmcp hands each notification to its handler on a task of its own, so
//! a handler may run after the response that followed it on the wire has
//! already reached the call: the call ends, its route is gone, and the
//! server's last "3 of 3" is lost (this happened on a loaded machine).
//! [`InOrder`] therefore routes progress notices where messages are read,
//! before rmcp sees the next message: everything a server reported before
//! answering has reached the call's sink when the answer arrives.

use agentkit_tools_core::{ProgressSink, ToolProgress};
use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, ProgressNotificationParam, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::sync::{Arc, Mutex};

/// A client transport that routes progress notices as it reads them and
/// passes every message on unchanged.
pub(crate) struct InOrder<T> {
    inner: T,
    routes: Arc<ProgressRoutes>,
}

impl<T> InOrder<T> {
    pub(crate) fn new(inner: T, routes: Arc<ProgressRoutes>) -> Self {
        InOrder { inner, routes }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for InOrder<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        if let JsonRpcMessage::Notification(notification) = &message
            && let ServerNotification::ProgressNotification(progress) = &notification.notification
        {
            let params = &progress.params;
            let token = params.progress_token.0.to_string();
            if !self.routes.deliver(token.clone(), tool_progress(params)) {
                tracing::debug!(%token, "progress before (or after) its call's route");
            }
        }
        Some(message)
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

/// Where each call's `notifications/progress` go: its progress token
/// (as text) to the sink of the call that sent it.
///
/// rmcp picks a request's token while sending it, so a fast server can
/// report progress before the call has registered its route (a loaded
/// machine delays the calling task). Such early notices wait, a bounded
/// few, until the route for their token appears.
#[derive(Default)]
pub(crate) struct ProgressRoutes(Mutex<Routes>);

/// The live routes and the notices that came before theirs.
#[derive(Default)]
struct Routes {
    live: std::collections::HashMap<String, ProgressSink>,
    early: std::collections::VecDeque<(String, ToolProgress)>,
}

/// How many notices without a route are kept for a route still to come;
/// older ones are dropped (a token that is never claimed costs nothing
/// beyond this).
const EARLY_NOTICES: usize = 64;

impl ProgressRoutes {
    /// Routes `token`'s notices to `sink` until the guard drops, first
    /// delivering those that arrived before.
    pub(crate) fn route(&self, token: String, sink: &ProgressSink) -> ProgressRoute<'_> {
        let early: Vec<ToolProgress> = {
            let mut routes = self.0.lock().expect("progress lock");
            routes.live.insert(token.clone(), sink.clone());
            let (mine, others) = std::mem::take(&mut routes.early)
                .into_iter()
                .partition(|(held, _)| *held == token);
            routes.early = others;
            mine.into_iter().map(|(_, progress)| progress).collect()
        };
        for progress in early {
            sink.report(progress);
        }
        ProgressRoute {
            routes: self,
            token,
        }
    }

    /// Hands one notice to its call's sink, or keeps it for a route still
    /// to come. Returns whether a live route took it.
    fn deliver(&self, token: String, progress: ToolProgress) -> bool {
        let sink = {
            let mut routes = self.0.lock().expect("progress lock");
            match routes.live.get(&token) {
                Some(sink) => sink.clone(),
                None => {
                    if routes.early.len() == EARLY_NOTICES {
                        routes.early.pop_front();
                    }
                    routes.early.push_back((token, progress));
                    return false;
                }
            }
        };
        sink.report(progress);
        true
    }
}

/// Routes a call's progress while it lives.
pub(crate) struct ProgressRoute<'a> {
    routes: &'a ProgressRoutes,
    token: String,
}

impl Drop for ProgressRoute<'_> {
    fn drop(&mut self) {
        self.routes
            .0
            .lock()
            .expect("progress lock")
            .live
            .remove(&self.token);
    }
}

/// One MCP progress notice as a tool progress report: the server's
/// message, else "3 of 5"; a fraction when the total is known.
fn tool_progress(params: &ProgressNotificationParam) -> ToolProgress {
    let message = params
        .message
        .clone()
        .unwrap_or_else(|| match params.total {
            Some(total) => format!("{} of {total}", params.progress),
            None => params.progress.to_string(),
        });
    let progress = ToolProgress::new(message);
    match params.total {
        Some(total) if total > 0.0 => progress.with_fraction((params.progress / total) as f32),
        _ => progress,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    fn collecting() -> (ProgressSink, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = {
            let seen = seen.clone();
            ProgressSink::new(move |p: ToolProgress| seen.lock().unwrap().push(p.message))
        };
        (sink, seen)
    }

    #[test]
    fn notices_before_the_route_reach_the_call_in_order() {
        let routes = ProgressRoutes::default();
        assert!(!routes.deliver("7".into(), ToolProgress::new("1 of 3")));
        assert!(!routes.deliver("8".into(), ToolProgress::new("other call")));
        assert!(!routes.deliver("7".into(), ToolProgress::new("2 of 3")));
        let (sink, seen) = collecting();
        let route = routes.route("7".into(), &sink);
        assert!(routes.deliver("7".into(), ToolProgress::new("3 of 3")));
        assert_eq!(*seen.lock().unwrap(), ["1 of 3", "2 of 3", "3 of 3"]);
        drop(route);
        // After the call, its notices no longer reach it; the other
        // token's early notice is still held for its own call.
        assert!(!routes.deliver("7".into(), ToolProgress::new("late")));
        assert_eq!(seen.lock().unwrap().len(), 3);
        let (other, heard) = collecting();
        let _other = routes.route("8".into(), &other);
        assert_eq!(*heard.lock().unwrap(), ["other call"]);
    }

    #[test]
    fn early_notices_are_bounded() {
        let routes = ProgressRoutes::default();
        for n in 0..EARLY_NOTICES + 10 {
            routes.deliver("9".into(), ToolProgress::new(n.to_string()));
        }
        let (sink, seen) = collecting();
        let _route = routes.route("9".into(), &sink);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), EARLY_NOTICES);
        assert_eq!(seen[0], "10", "the oldest were dropped");
    }

    /// A transport that reads a fixed list of messages.
    struct Script(std::collections::VecDeque<RxJsonRpcMessage<RoleClient>>);

    impl Transport<RoleClient> for Script {
        type Error = std::io::Error;

        fn send(
            &mut self,
            _item: TxJsonRpcMessage<RoleClient>,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            std::future::ready(Ok(()))
        }

        async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
            self.0.pop_front()
        }

        async fn close(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    fn message(json: serde_json::Value) -> RxJsonRpcMessage<RoleClient> {
        serde_json::from_value(json).expect("a server message")
    }

    /// The race CI lost once: the server's last notice and its answer
    /// arrive back to back. The notice must have reached the call's sink
    /// before the answer is handed on, whatever the scheduler does next.
    #[tokio::test]
    async fn a_notice_reaches_the_call_before_the_answer_behind_it_is_read() {
        let routes = Arc::new(ProgressRoutes::default());
        let (sink, seen) = collecting();
        let _route = routes.route("0".into(), &sink);
        let mut transport = InOrder::new(
            Script(
                [
                    message(
                        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": 0, "progress": 3, "total": 3}}),
                    ),
                    message(
                        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/message",
                        "params": {"level": "info", "data": "done"}}),
                    ),
                    message(serde_json::json!({"jsonrpc": "2.0", "id": 0,
                        "result": {"content": [{"type": "text", "text": "Steps: 3"}]}})),
                ]
                .into(),
            ),
            routes.clone(),
        );
        let first = transport.receive().await.expect("the notice");
        assert!(matches!(first, JsonRpcMessage::Notification(_)));
        assert_eq!(*seen.lock().unwrap(), ["3 of 3"], "routed as it was read");
        transport.receive().await.expect("the log message");
        let answer = transport.receive().await.expect("the answer");
        assert!(
            matches!(answer, JsonRpcMessage::Response(_)),
            "passed on unchanged"
        );
        assert_eq!(
            seen.lock().unwrap().len(),
            1,
            "other messages report nothing"
        );
        assert!(transport.receive().await.is_none());
    }
}
