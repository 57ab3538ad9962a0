//! A bridge from the loop's synchronous observer calls to async consumers.

use agentkit_loop::{AgentEvent, LoopObserver};
use tokio::sync::mpsc;

/// Sends every event into an unbounded channel. The loop never waits on the
/// consumer; if the receiver is gone, events are dropped.
///
/// ```
/// use agentkit_core::Item;
/// use agentkit_loop::{Agent, LoopStep, SessionConfig};
/// use agentkit_reporting::ChannelObserver;
/// use agentkit_testkit::{ScriptedModel, ScriptedTurn};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let (observer, mut events) = ChannelObserver::new();
/// // A consumer task (a UI, a database writer) reads at its own pace.
/// let consumer = tokio::spawn(async move {
///     let mut count = 0;
///     while events.recv().await.is_some() {
///         count += 1;
///     }
///     count
/// });
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([ScriptedTurn::text("hi")]))
///     .observer(observer)
///     .input(vec![Item::user("hello")])
///     .build()?;
/// let mut driver = agent.start(SessionConfig::new("demo")).await?;
/// assert!(matches!(driver.next().await?, LoopStep::Finished(_)));
/// drop((driver, agent)); // closes the channel
/// assert!(consumer.await.unwrap() > 0);
/// # Ok::<(), agentkit_loop::LoopError>(())
/// # }).unwrap();
/// ```
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
