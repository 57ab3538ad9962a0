//! Against the MCP reference server over stdio: the host's side of
//! resources and prompts through the manager (listing, templates, reads,
//! subscriptions with their update events, prompts with arguments, typed
//! errors), server log messages as host events, and resource links and
//! embedded resources in tool results kept as parts.

mod common;

use agentkit_core::{DataRef, Part, ToolOutput};
use agentkit_mcp::{McpError, McpServerEvent, McpServerManager};
use agentkit_tools_core::{
    McpOperation, PermissionPayload, ToolContext, ToolError, ToolRequest, ToolSource,
};
use common::{everything, tool, within};
use serde_json::json;
use std::collections::BTreeMap;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_templates_and_prompts_are_listed_read_and_fetched() {
    within(90, "the resources and prompts listing test", async {
        let manager = McpServerManager::new();
        manager.register(everything("everything")).unwrap();

        // Listing connects the server first.
        let resources = manager.list_resources("everything").await.unwrap();
        assert!(!resources.is_empty());
        assert_eq!(manager.resources("everything").unwrap(), resources);

        let templates = manager.list_resource_templates("everything").await.unwrap();
        let text = templates
            .iter()
            .find(|t| t.uri_template == "demo://resource/dynamic/text/{resourceId}")
            .unwrap_or_else(|| panic!("the text template is listed: {templates:?}"));
        // A URI from the template reads like any resource.
        let uri = text.uri_template.replace("{resourceId}", "7");
        let parts = manager.read_resource("everything", &uri).await.unwrap();
        let [Part::File(file)] = &parts[..] else {
            panic!("one file part expected, got {parts:?}")
        };
        assert_eq!(file.name.as_deref(), Some(uri.as_str()));
        assert_eq!(file.mime_type.as_deref(), Some("text/plain"));
        let DataRef::Text { text } = &file.data else {
            panic!("text content expected, got {:?}", file.data)
        };
        assert!(text.starts_with("Resource 7:"), "{text}");

        // The server refuses a URI nobody offers: a typed error with its
        // JSON-RPC code, and the session stays usable.
        let missing = manager
            .read_resource("everything", "demo://no/such/resource")
            .await
            .unwrap_err();
        assert!(
            matches!(missing, McpError::Rejected { ref server, code: -32602, .. } if server == "everything"),
            "{missing:?}"
        );

        let prompts = manager.list_prompts("everything").await.unwrap();
        assert!(prompts.iter().any(|p| p.name == "simple-prompt"), "{prompts:?}");
        assert_eq!(manager.prompts("everything").unwrap(), prompts);
        // A required argument left out: the server's refusal, typed.
        let refused = manager
            .get_prompt("everything", "args-prompt", BTreeMap::new())
            .await
            .unwrap_err();
        assert!(matches!(refused, McpError::Rejected { .. }), "{refused:?}");
        let items = manager
            .get_prompt(
                "everything",
                "args-prompt",
                [("city".to_owned(), "Porto".to_owned())].into(),
            )
            .await
            .unwrap();
        assert!(items[0].text_content().contains("Porto"), "{items:?}");

        assert!(matches!(
            manager.list_prompts("nobody").await,
            Err(McpError::UnknownServer(_))
        ));
    })
    .await;
}

/// Turns the reference server's simulated resource updates on or off.
async fn toggle_updates(manager: &McpServerManager) {
    manager
        .call_tool(
            "everything",
            "toggle-subscriber-updates",
            json!({}),
            ToolContext::detached(),
        )
        .await
        .expect("the toggle tool answers");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribed_resources_report_their_updates_to_the_host() {
    within(90, "the subscription test", async {
        let manager = McpServerManager::new();
        manager.register(everything("everything")).unwrap();
        let mut events = manager.events();
        let uri = "demo://resource/dynamic/text/1";
        manager.subscribe_resource("everything", uri).await.unwrap();
        // The server sends an update for each subscribed resource at once,
        // then every five seconds.
        toggle_updates(&manager).await;
        let mut logged_subscription = false;
        loop {
            match events.recv().await.expect("the manager lives") {
                McpServerEvent::ResourceUpdated {
                    server,
                    uri: updated,
                } => {
                    assert_eq!((server.as_str(), updated.as_str()), ("everything", uri));
                    break;
                }
                // The server logs each subscription through MCP.
                McpServerEvent::Log(message) => {
                    assert_eq!(message.server, "everything");
                    logged_subscription |= message
                        .data
                        .as_str()
                        .is_some_and(|text| text.contains("Subscribe Resource request"));
                }
                _ => {}
            }
        }
        assert!(
            logged_subscription,
            "the subscription's log message came first"
        );

        manager
            .unsubscribe_resource("everything", uri)
            .await
            .unwrap();
        // Updates stop; turning them off ends the server's timer.
        toggle_updates(&manager).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_links_and_embedded_resources_stay_parts() {
    within(60, "the resource parts test", async {
        let manager = McpServerManager::new();
        manager.register(everything("everything")).unwrap();

        let links = manager
            .call_tool(
                "everything",
                "get-resource-links",
                json!({ "count": 2 }),
                ToolContext::detached(),
            )
            .await
            .unwrap();
        let ToolOutput::Parts(parts) = &links.output else {
            panic!("parts expected, got {:?}", links.output)
        };
        assert_eq!(parts.len(), 3, "an intro and two links: {parts:?}");
        // Each link is its own part: the model reads where it points, the
        // host finds the link block itself in the metadata.
        for (part, id) in parts[1..].iter().zip([1, 2]) {
            let Part::Text(link) = part else {
                panic!("a text part per link, got {part:?}")
            };
            let block = &link.metadata["mcp.resource_link"];
            assert_eq!(block["type"], "resource_link");
            let uri = block["uri"].as_str().unwrap();
            assert!(uri.ends_with(&format!("/{id}")), "{uri}");
            assert!(link.text.contains(uri), "{}", link.text);
        }

        let embedded = manager
            .call_tool(
                "everything",
                "get-resource-reference",
                json!({ "resourceType": "Blob", "resourceId": 3 }),
                ToolContext::detached(),
            )
            .await
            .unwrap();
        let ToolOutput::Parts(parts) = &embedded.output else {
            panic!("parts expected, got {:?}", embedded.output)
        };
        let [Part::Text(_), Part::File(file), Part::Text(_)] = &parts[..] else {
            panic!("text, the embedded resource, text: {parts:?}")
        };
        assert_eq!(
            file.metadata["mcp.uri"], "demo://resource/dynamic/blob/3",
            "{file:?}"
        );
        let DataRef::Bytes { data } = &file.data else {
            panic!("the blob decoded to bytes, got {:?}", file.data)
        };
        assert!(
            String::from_utf8_lossy(data).starts_with("Resource 3:"),
            "{data:?}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_and_prompts_can_be_offered_to_the_model_as_tools() {
    within(60, "the resource tools test", async {
        let manager = McpServerManager::new();
        manager.register(everything("everything")).unwrap();
        manager.connect("everything").await.unwrap();
        let source = manager.source();
        let names = source.snapshot().names();
        // Off by default: the model sees the server's own tools only.
        assert!(!names.iter().any(|n| n.ends_with("_read_resource")), "{names:?}");

        manager.set_resource_tools(true);
        let read = tool(&source, "mcp_everything_read_resource");
        let get = tool(&source, "mcp_everything_get_prompt");
        // The descriptions tell the model what there is.
        let resource = &manager.resources("everything").unwrap()[0];
        assert!(read.spec().description.contains(&resource.uri));
        assert!(get.spec().description.contains("args-prompt(city"));
        assert!(read.spec().annotations.read_only);

        let input = json!({ "uri": resource.uri });
        // Policies see a resource read, not a tool call.
        assert_eq!(
            read.proposed_requests(&input).unwrap()[0].payload,
            PermissionPayload::Mcp(McpOperation::ReadResource {
                server: "everything".into(),
                uri: resource.uri.clone(),
            })
        );
        let result = read
            .invoke(request("mcp_everything_read_resource", input), ToolContext::detached())
            .await
            .unwrap();
        let ToolOutput::Parts(parts) = &result.output else {
            panic!("parts expected, got {:?}", result.output)
        };
        assert!(matches!(&parts[..], [Part::File(file)] if file.name.as_deref() == Some(resource.uri.as_str())), "{parts:?}");

        let result = get
            .invoke(
                request(
                    "mcp_everything_get_prompt",
                    json!({ "name": "args-prompt", "arguments": { "city": "Oslo" } }),
                ),
                ToolContext::detached(),
            )
            .await
            .unwrap();
        let text = result.output.to_text();
        assert!(text.starts_with("[user]") && text.contains("Oslo"), "{text}");

        // The server's refusal reaches the model as a failed call.
        let missing = read
            .invoke(
                request("mcp_everything_read_resource", json!({ "uri": "demo://nothing" })),
                ToolContext::detached(),
            )
            .await
            .unwrap_err();
        assert!(matches!(missing, ToolError::ExecutionFailed(_)), "{missing:?}");

        manager.set_resource_tools(false);
        assert!(
            !source.snapshot().names().iter().any(|n| n.ends_with("_get_prompt")),
            "gone again"
        );
    })
    .await;
}

fn request(name: &str, input: serde_json::Value) -> ToolRequest {
    ToolRequest::new("call-1", name, input)
}
