//! Progress notices, routed to the call they belong to.
//!
//! Each call registers a route from its progress token to its
//! `ProgressSink` while it runs; [`crate::notices::InOrder`] delivers the
//! server's notices to it as the transport reads them, so every notice a
//! server sent before its answer reaches the call before the answer does.

use agentkit_tools_core::{ProgressSink, ToolProgress};
use rmcp::model::ProgressNotificationParam;
use std::sync::Mutex;

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
    pub(crate) fn deliver(&self, token: String, progress: ToolProgress) -> bool {
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
pub(crate) fn tool_progress(params: &ProgressNotificationParam) -> ToolProgress {
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
pub(crate) mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A sink that keeps each report's message, and what it kept.
    pub(crate) fn collecting() -> (ProgressSink, Arc<Mutex<Vec<String>>>) {
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
}
