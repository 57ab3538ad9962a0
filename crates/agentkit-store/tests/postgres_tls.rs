//! The PostgreSQL store over TLS (rustls) against a real server whose
//! self-signed certificate the test generates, written as the attacks a
//! client must refuse: a certificate from another CA, a certificate for
//! another host, a server without TLS when TLS is required.

mod support;

use agentkit_store::{NewSession, PgStore, SessionStore, StoreError};
use agentkit_testkit::pg::TempCluster;

fn self_signed(host: &str) -> (String, String) {
    let key = rcgen::generate_simple_self_signed(vec![host.to_owned()]).unwrap();
    (key.cert.pem(), key.signing_key.serialize_pem())
}

#[tokio::test]
async fn tls_with_the_servers_ca_works_and_every_impostor_is_refused() {
    let (cert, key) = self_signed("localhost");
    let cluster = TempCluster::start_with_tls(&cert, &key);

    // The real server, its certificate trusted, TLS required.
    let store = PgStore::builder(&cluster.tcp_conninfo("localhost", "require"))
        .tls_roots_pem(cert.as_bytes())
        .unwrap()
        .max_connections(4)
        .connect()
        .await
        .expect("TLS with the server's own CA connects");
    let created = store
        .create(NewSession::new().with_id("over-tls"))
        .await
        .unwrap();
    assert_eq!(store.list().await.unwrap()[0].id, created.id);
    // The session really went over TLS: the server says so.
    let plain = PgStore::connect(&cluster.conninfo()).await.unwrap();
    drop(plain);
    let (client, connection) = tokio_postgres::connect(&cluster.conninfo(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let tls_backends: i64 = client
        .query_one(
            "SELECT COUNT(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) WHERE ssl AND client_addr IS NOT NULL",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(tls_backends >= 1, "no TLS connection seen by the server");

    // Attacks: each row is a client setting that must not connect.
    let (other_ca, _) = self_signed("localhost");
    let (wrong_host_cert, _) = self_signed("db.example.com");
    let refused = [
        (
            "a certificate from another CA",
            "localhost",
            other_ca.as_str(),
        ),
        (
            "trusting a certificate for another host",
            "127.0.0.1",
            cert.as_str(),
        ),
        (
            "a CA for another host name",
            "localhost",
            wrong_host_cert.as_str(),
        ),
    ];
    for (attack, host, ca) in refused {
        let result = PgStore::builder(&cluster.tcp_conninfo(host, "require"))
            .tls_roots_pem(ca.as_bytes())
            .unwrap()
            .connect()
            .await;
        assert!(
            matches!(result, Err(StoreError::Database { .. })),
            "{attack}: connected anyway"
        );
    }
    // No usable CA at all: a typed error before any connection.
    for pem in [
        "",
        "not a certificate",
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    ] {
        let result = PgStore::builder(&cluster.tcp_conninfo("localhost", "require"))
            .tls_roots_pem(pem.as_bytes());
        assert!(
            matches!(result, Err(StoreError::Tls(_))),
            "{pem:?} was accepted"
        );
    }
    // TLS required but the client has none configured: refused.
    let plain = PgStore::connect(&cluster.tcp_conninfo("localhost", "require")).await;
    assert!(plain.is_err(), "sslmode=require without TLS connected");
}
