//! The event log, against any backend.

use agentkit_store::{EventLog, NewSession, SessionStore, StoreError, StoredEvent};

fn event(seq: u64, run: &str, body: &str) -> StoredEvent {
    StoredEvent {
        seq,
        run_id: run.into(),
        event: format!("{{\"type\":\"{body}\"}}"),
    }
}

/// Appended in order, read back after any number, never rewritten, gone
/// with the session.
pub async fn events_are_kept_in_order_and_never_rewritten(store: &(impl SessionStore + EventLog)) {
    let a = store
        .create(NewSession::new().with_id("a"))
        .await
        .unwrap()
        .id;
    let b = store
        .create(NewSession::new().with_id("b"))
        .await
        .unwrap()
        .id;
    let first = [event(1, "r1", "RUN_STARTED"), event(2, "r1", "TEXT")];
    store.append_events(&a, &first).await.unwrap();
    store.append_events(&a, &[]).await.unwrap();
    // A replica that lost the session replays 2 with other content: kept as first written.
    store
        .append_events(
            &a,
            &[event(2, "r9", "FORGED"), event(3, "r1", "RUN_FINISHED")],
        )
        .await
        .unwrap();
    store
        .append_events(&b, &[event(1, "rb", "B")])
        .await
        .unwrap();
    let all = store.events_after(&a, 0).await.unwrap();
    assert_eq!(
        all,
        [
            first[0].clone(),
            first[1].clone(),
            event(3, "r1", "RUN_FINISHED")
        ]
    );
    assert_eq!(
        store.events_after(&a, 2).await.unwrap(),
        [event(3, "r1", "RUN_FINISHED")]
    );
    assert_eq!(store.events_after(&a, 3).await.unwrap(), []);
    assert_eq!(
        store.events_after(&b, 0).await.unwrap(),
        [event(1, "rb", "B")]
    );
    store.delete(&a).await.unwrap();
    assert_eq!(store.events_after(&a, 0).await.unwrap(), []);
    assert!(matches!(store.info(&a).await, Err(StoreError::NotFound(_))));
}
