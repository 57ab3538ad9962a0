//! The chat page in a real browser: headless Chromium (installed by
//! `cargo xtask fixtures`), driven over WebDriver by chromedriver on
//! 127.0.0.1, opens the page a served agent answers at `GET /`, chats,
//! approves a tool call, and reloads to find the conversation again; and
//! queues a message typed while the agent works, then cancels a run.

mod support;

use agentkit_core::FinishReason;
use agentkit_testkit::ScriptedTurn;
use serde_json::{Value, json};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use support::{PATIENCE, TOKEN_A, start};

const CHROMIUM: &str = "/usr/bin/chromium";

fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success())
}

/// chromedriver, stopped when dropped.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    /// Stops chromedriver and every browser it started, even when the test
    /// failed before closing them: they all live in chromedriver's own
    /// process group.
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    async fn start() -> Self {
        assert!(
            runs(CHROMIUM) && runs("chromedriver"),
            "Chromium and chromedriver are needed for the chat page test: run `cargo xtask fixtures` \
             (it installs Debian's `chromium` and `chromium-driver`)"
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("chromedriver")
            .args([format!("--port={port}"), "--allowed-ips=127.0.0.1".into()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("chromedriver starts");
        let driver = Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let http = support::http_client();
        let deadline = Instant::now() + PATIENCE;
        loop {
            let status = http.get(format!("{}/status", driver.url)).send().await;
            if let Ok(response) = status
                && let Ok(body) = response.json::<Value>().await
                && body["value"]["ready"] == true
            {
                return driver;
            }
            assert!(Instant::now() < deadline, "chromedriver never became ready");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// A WebDriver session: one headless Chromium.
struct Browser {
    http: reqwest::Client,
    session: String,
    _profile: tempfile::TempDir,
}

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

impl Browser {
    async fn open(driver: &Driver) -> Self {
        let profile = tempfile::tempdir().unwrap();
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            &format!("--user-data-dir={}", profile.path().display()),
        ];
        let http = support::http_client();
        let answer: Value = http
            .post(format!("{}/session", driver.url))
            .json(&json!({ "capabilities": { "alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": { "binary": CHROMIUM, "args": args },
            }}}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let session = answer["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {answer}"));
        Self {
            http,
            session: format!("{}/session/{session}", driver.url),
            _profile: profile,
        }
    }

    async fn call(&self, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}{path}", self.session);
        let request = match body {
            Some(body) => self.http.post(url).json(&body),
            None => self.http.get(url),
        };
        let answer: Value = request.send().await.unwrap().json().await.unwrap();
        assert!(
            answer["value"]["error"].is_null(),
            "WebDriver {path}: {answer}"
        );
        answer["value"].clone()
    }

    async fn go(&self, url: &str) {
        self.call("/url", Some(json!({ "url": url }))).await;
    }

    async fn script(&self, script: &str) -> Value {
        self.call(
            "/execute/sync",
            Some(json!({ "script": script, "args": [] })),
        )
        .await
    }

    async fn element(&self, css: &str) -> String {
        let found = self
            .call(
                "/element",
                Some(json!({ "using": "css selector", "value": css })),
            )
            .await;
        found[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {found}"))
            .to_owned()
    }

    async fn click(&self, css: &str) {
        let element = self.element(css).await;
        self.call(&format!("/element/{element}/click"), Some(json!({})))
            .await;
    }

    async fn send(&self, text: &str) {
        let input = self.element("#text").await;
        self.call(
            &format!("/element/{input}/value"),
            Some(json!({ "text": text })),
        )
        .await;
        self.click("#submit").await;
    }

    /// Waits until the script returns `true`; `what` names it on failure.
    async fn wait_for(&self, script: &str, what: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if self.script(script).await == true {
                return;
            }
            if Instant::now() > deadline {
                let log = self.script("return document.body.innerText").await;
                panic!("the page never showed {what}; it shows:\n{log}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until the conversation shows `text`.
    async fn wait_text(&self, text: &str) {
        let script = format!(
            "return document.getElementById('log').innerText.includes({})",
            json!(text)
        );
        self.wait_for(&script, &format!("{text:?}")).await;
    }

    async fn close(self) {
        let _ = self.http.delete(&self.session).send().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_chats_approves_and_finds_the_conversation_after_a_reload() {
    let driver = Driver::start().await;
    let server = start(vec![
        ScriptedTurn::new()
            .say_chunks(&["Hello ", "from ", "the page!"])
            .finish(FinishReason::Completed),
        ScriptedTurn::tool_call("call-deploy", "deploy", json!({ "target": "production" })),
        ScriptedTurn::text("The site is live."),
    ])
    .await;
    let browser = Browser::open(&driver).await;
    browser
        .go(&format!("{}/#token={TOKEN_A}", server.url))
        .await;
    browser
        .wait_for(
            "return location.search.startsWith('?thread=') && !location.hash",
            "its thread in the URL and the token out of it",
        )
        .await;

    browser.send("hi").await;
    browser.wait_text("Hello from the page!").await;
    browser
        .wait_for(
            "return document.getElementById('status').innerText === 'idle'",
            "the run's end",
        )
        .await;

    browser.send("deploy it").await;
    browser
        .wait_for(
            "return !!document.querySelector('.approval button.approve')",
            "an approval button",
        )
        .await;
    browser
        .wait_text("deploy {\"target\":\"production\"}")
        .await;
    assert_eq!(
        server.deploy.runs.load(Ordering::SeqCst),
        0,
        "nothing runs before the approval"
    );
    browser.click(".approval button.approve").await;
    browser.wait_text("→ deployed").await;
    browser.wait_text("The site is live.").await;
    assert_eq!(server.deploy.runs.load(Ordering::SeqCst), 1);

    // The session is the server's: the page's thread is the tenant's one.
    let sessions = server.get_json(TOKEN_A, "/sessions").await;
    let thread = sessions["sessions"][0]["threadId"].as_str().unwrap();
    let search = browser.script("return location.search").await;
    assert_eq!(search, json!(format!("?thread={thread}")));

    browser.call("/refresh", Some(json!({}))).await;
    for text in [
        "hi",
        "Hello from the page!",
        "deploy it",
        "→ deployed",
        "The site is live.",
    ] {
        browser.wait_text(text).await;
    }
    let approvals = browser
        .script("return document.querySelectorAll('.approval').length")
        .await;
    assert_eq!(approvals, 0, "the answered approval is not asked again");
    browser.close().await;
    server.stop().await;
}

/// The page's status line is `status`.
fn status_is(status: &str) -> String {
    format!(
        "return document.getElementById('status').innerText === {}",
        json!(status)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_queues_what_is_typed_while_the_agent_works_and_cancels() {
    let driver = Driver::start().await;
    let server = start(vec![
        ScriptedTurn::tool_call("call-wait-1", "wait", json!({})),
        ScriptedTurn::text("Got your note."),
        ScriptedTurn::tool_call("call-wait-2", "wait", json!({})),
    ])
    .await;
    let browser = Browser::open(&driver).await;
    browser
        .go(&format!("{}/#token={TOKEN_A}", server.url))
        .await;

    browser.send("start").await;
    browser.wait_text("wait {}").await;
    browser
        .wait_for(&status_is("working"), "the agent working")
        .await;
    browser.send("also this").await;
    browser
        .wait_for(
            "return document.getElementById('queued').innerText.includes('queued: also this')",
            "the queued message",
        )
        .await;
    let session = server.get_json(TOKEN_A, "/sessions").await;
    let thread = session["sessions"][0]["threadId"].as_str().unwrap();
    let state = server
        .get_json(TOKEN_A, &format!("/sessions/{thread}"))
        .await;
    assert_eq!(state["queued"][0]["text"], "also this", "{state}");

    server.gate.open();
    browser.wait_text("Got your note.").await;
    browser
        .wait_for(
            "return document.getElementById('queued').children.length === 0",
            "the queue emptied",
        )
        .await;
    browser.wait_text("also this").await;
    browser.wait_for(&status_is("idle"), "the run's end").await;

    browser.send("wait again").await;
    browser
        .wait_for(
            "return document.querySelectorAll('.tool').length === 2",
            "the second call",
        )
        .await;
    browser.click("#cancel").await;
    browser
        .wait_for(&status_is("idle"), "the run cancelled")
        .await;
    let state = server
        .get_json(TOKEN_A, &format!("/sessions/{thread}"))
        .await;
    assert_eq!(state["running"], false, "{state}");
    browser.close().await;
    server.stop().await;
}
