//! A bridge from the loop's synchronous observer calls to async consumers.

use agentkit_loop::{AgentEvent, LoopObserver};
use tokio::sync::mpsc;

/// Sends every event into an unbounded channel. The loop never waits on the
/// consumer; if the receiver is gone, events are dropped.
#[derive(Clone, Debug)]
pub struct ChannelObserver {
    sender: mpsc::UnboundedSender<AgentEvent>,
}

impl ChannelObserver {
    /// An observer and the receiving end of its channel.
    pub fn new() -> (Self, mpsc::UnboundedReceiver<AgentEvent>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (Self { sender }, receiver)
    }
}

impl LoopObserver for ChannelObserver {
    fn handle_event(&self, event: AgentEvent) {
        let _ = self.sender.send(event);
    }
}
