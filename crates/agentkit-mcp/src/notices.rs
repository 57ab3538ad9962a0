//! A server's notifications, handled in the order the server sent them.
//!
//! rmcp hands each notification to its handler on a task of its own, so two
//! notifications may be handled in either order, and a handler may run after
//! the response that followed it on the wire has already reached the call.
//! A call could end and drop its progress route before the handler of the
//! server's last "3 of 3" ran (CI lost it once on a loaded machine), and a
//! host could see a resource's update before the log line the server wrote
//! first. [`InOrder`] therefore handles the notifications that only pass
//! something on (progress to its call, host events, the tool list's change)
//! where the transport reads them, before rmcp sees the next message.

use crate::events::McpServerEvent;
use crate::progress::{ProgressRoutes, tool_progress};
use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::sync::Arc;
use tokio::sync::{Notify, broadcast};

/// Where a session's notifications go.
pub(crate) struct Notices {
    /// The server's name, in the events.
    pub(crate) server: String,
    /// Each call's progress route.
    pub(crate) progress: Arc<ProgressRoutes>,
    /// The host's events, when it listens.
    pub(crate) events: Option<broadcast::Sender<McpServerEvent>>,
    /// Woken when the server's tool list changed.
    pub(crate) tools_changed: Arc<Notify>,
}

impl Notices {
    /// Handles `notification` now; the others (cancellations, task
    /// status, extensions) are left to rmcp's handler.
    #[allow(deprecated)] // the logging notice, still sent by servers we speak with
    fn handle(&self, notification: &ServerNotification) {
        let event = match notification {
            ServerNotification::ProgressNotification(progress) => {
                let params = &progress.params;
                let token = params.progress_token.0.to_string();
                if !self.progress.deliver(token.clone(), tool_progress(params)) {
                    tracing::debug!(server = %self.server, %token, "progress before (or after) its call's route");
                }
                return;
            }
            ServerNotification::ToolListChangedNotification(_) => {
                tracing::debug!(server = %self.server, "tools/list_changed received");
                self.tools_changed.notify_one();
                return;
            }
            ServerNotification::LoggingMessageNotification(log) => {
                McpServerEvent::Log(crate::logging::record(&self.server, &log.params))
            }
            ServerNotification::ResourceUpdatedNotification(updated) => {
                McpServerEvent::ResourceUpdated {
                    server: self.server.clone(),
                    uri: updated.params.uri.clone(),
                }
            }
            ServerNotification::ResourceListChangedNotification(_) => {
                McpServerEvent::ResourcesChanged {
                    server: self.server.clone(),
                }
            }
            ServerNotification::PromptListChangedNotification(_) => {
                McpServerEvent::PromptsChanged {
                    server: self.server.clone(),
                }
            }
            _ => return,
        };
        if let Some(events) = &self.events {
            // Nobody listening is fine.
            let _ = events.send(event);
        }
    }
}

/// A client transport that handles notifications as it reads them (see
/// [`Notices`]) and passes every message on unchanged.
pub(crate) struct InOrder<T> {
    inner: T,
    notices: Notices,
}

impl<T> InOrder<T> {
    pub(crate) fn new(inner: T, notices: Notices) -> Self {
        InOrder { inner, notices }
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
        if let JsonRpcMessage::Notification(notification) = &message {
            self.notices.handle(&notification.notification);
        }
        Some(message)
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// The race CI lost once: the server's last notice, a log line, an
    /// update and its answer arrive back to back. Each must have been
    /// handled before the next message is handed on, whatever the
    /// scheduler does with rmcp's handler tasks.
    #[tokio::test]
    async fn notices_are_handled_before_the_message_behind_them_is_read() {
        let progress = Arc::new(ProgressRoutes::default());
        let (sink, seen) = crate::progress::tests::collecting();
        let _route = progress.route("0".into(), &sink);
        let (events, mut heard) = broadcast::channel(8);
        let tools_changed = Arc::new(Notify::new());
        let notices = Notices {
            server: "s".into(),
            progress: progress.clone(),
            events: Some(events),
            tools_changed: tools_changed.clone(),
        };
        let mut transport = InOrder::new(
            Script(
                [
                    message(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": 0, "progress": 3, "total": 3}})),
                    message(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/message",
                        "params": {"level": "info", "data": "subscribed"}})),
                    message(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                        "params": {"uri": "demo://1"}})),
                    message(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})),
                    message(serde_json::json!({"jsonrpc": "2.0", "id": 0,
                        "result": {"content": [{"type": "text", "text": "Steps: 3"}]}})),
                ]
                .into(),
            ),
            notices,
        );
        let first = transport.receive().await.expect("the notice");
        assert!(matches!(first, JsonRpcMessage::Notification(_)));
        assert_eq!(*seen.lock().unwrap(), ["3 of 3"], "routed as it was read");
        transport.receive().await.expect("the log line");
        match heard.try_recv().expect("published as it was read") {
            McpServerEvent::Log(log) => assert_eq!(log.data, "subscribed"),
            other => panic!("expected the log line, got {other:?}"),
        }
        transport.receive().await.expect("the update");
        match heard.try_recv().expect("published as it was read") {
            McpServerEvent::ResourceUpdated { server, uri } => {
                assert_eq!((server.as_str(), uri.as_str()), ("s", "demo://1"));
            }
            other => panic!("expected the update, got {other:?}"),
        }
        transport.receive().await.expect("the tool list change");
        tokio::time::timeout(std::time::Duration::from_secs(5), tools_changed.notified())
            .await
            .expect("the tool list's change was signalled");
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
        assert!(heard.try_recv().is_err(), "nothing else was published");
        assert!(transport.receive().await.is_none());
    }
}
