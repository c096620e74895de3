//! `webhooks …`: the endpoints alarm servers, DECT and pager gateways take
//! events at (DECISIONS §16), and the delivery log.
//!
//! A secret is printed exactly once, by `create` or `rotate`. `rotate` adds
//! a second secret: every attempt is then signed with both (Standard
//! Webhooks' space-separated signatures), so the receiver can switch at its
//! own pace; `retire-secret` drops the older. URLs must be `https` (`http`
//! only to this machine), without user name, password or fragment, and go
//! to the home's network or this machine only with `--private-network`
//! ([`crate::private_network`], DECISIONS §20). With
//! `--secrets-key` the secrets are stored sealed ([`crate::webhook_secrets`]).

use chrono::Duration;
use clap::Subcommand;
use serde::Serialize;

use nurse_call_core::{
    Attempt, AttemptEnd, WebhookStore, admin_text, clock,
    sealing::{Sealer, is_sealed},
    webhooks::{Endpoint, EventType, check_url, default_name},
};

use crate::failure::{Failure, Outcome};
use crate::output::{Output, or_dash, table};
use crate::webhook_secrets::{IssuedSecret, new_sealed_secret, seal_secrets};

/// How far back `deliveries` looks: as long as the log keeps attempts.
const LOG_DAYS: i64 = 30;

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Register an endpoint and print its id and secret (shown only this once).
    Create {
        /// Where events are posted: https://…, or http:// to this machine.
        #[arg(long)]
        url: String,
        /// What displays call it when it fails; the URL's host by default.
        #[arg(long)]
        name: Option<String>,
        /// An event type it gets (repeat for several; none: every type):
        /// call.alert, call.escalated, call.accepted, call.declined,
        /// call.cancelled, call.closed, element.attention, consumer.silent,
        /// consumer.back.
        #[arg(long = "event")]
        events: Vec<String>,
        /// A section code whose calls it gets (repeat for several; none: the
        /// whole house). Calls without a section go to every endpoint.
        #[arg(long = "section")]
        sections: Vec<String>,
        /// The alarm server sends `received` (POST /api/v1/response) when a
        /// handset got an alert. Without it, its 2xx to a call.alert is the
        /// receipt of the recipients with a device named in it.
        #[arg(long)]
        confirms_delivery: bool,
        /// The alarm server is on the home's own network or this machine:
        /// its host may be or resolve to a loopback, private (10/8,
        /// 172.16/12, 192.168/16, 100.64/10, fc00::/7), link-local or
        /// unspecified address. Without it such a URL is refused, and so is
        /// every connection that resolves to one.
        #[arg(long)]
        private_network: bool,
    },
    /// List the endpoints: id, name, URL, events, sections, receipts, network, secrets, state (never a secret).
    List,
    /// Add a second secret and print it; attempts carry a signature of each until `retire-secret`.
    Rotate {
        /// The endpoint's id.
        id: String,
    },
    /// Seal every secret still kept plain with the installation's KMS key
    /// (--secrets-key): for endpoints made before it was given.
    SealSecrets,
    /// Drop the older of two secrets; attempts are signed with the newest only.
    RetireSecret {
        /// The endpoint's id.
        id: String,
    },
    /// Stop sending to an endpoint (events written meanwhile are not sent to it).
    Disable {
        /// The endpoint's id.
        id: String,
    },
    /// Send to a disabled endpoint again.
    Enable {
        /// The endpoint's id.
        id: String,
    },
    /// Delete an endpoint (its delivery log stays until it expires).
    Delete {
        /// The endpoint's id.
        id: String,
    },
    /// The delivery log of the last 30 days, newest first: every attempt and how it ended.
    Deliveries {
        /// Only attempts that did not deliver (retried or given up).
        #[arg(long)]
        failed: bool,
        /// At most this many lines.
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
}

pub(crate) async fn run(
    command: Command,
    store: &dyn WebhookStore,
    sealer: &dyn Sealer,
    out: Output,
) -> Outcome {
    match command {
        Command::Create {
            url,
            name,
            events,
            sections,
            confirms_delivery,
            private_network,
        } => {
            let asked = Asked {
                url: &url,
                name: name.as_deref(),
                events: &events,
                sections: &sections,
                confirms_delivery,
                private_network,
            };
            create(store, sealer, out, asked).await
        }
        Command::List => list(store, out).await,
        Command::Rotate { id } => rotate(store, sealer, out, &id).await,
        Command::SealSecrets => seal_secrets(store, sealer, out).await,
        Command::RetireSecret { id } => {
            change(store, out, &id, "Retired the older secret of", |e| {
                if e.secrets.len() < 2 {
                    return Err(Failure::refused(format!(
                        "endpoint {} has one secret only; `rotate` adds a second",
                        e.id
                    )));
                }
                e.secrets.remove(0);
                Ok(())
            })
            .await
        }
        Command::Disable { id } => {
            change(store, out, &id, "Disabled", |e| {
                e.disabled = true;
                Ok(())
            })
            .await
        }
        Command::Enable { id } => {
            change(store, out, &id, "Enabled", |e| {
                e.disabled = false;
                Ok(())
            })
            .await
        }
        Command::Delete { id } => delete(store, out, &id).await,
        Command::Deliveries { failed, limit } => deliveries(store, out, failed, limit).await,
    }
}

/// The printable record of an endpoint: how many secrets, never one.
#[derive(Serialize)]
struct EndpointRow {
    id: String,
    name: String,
    url: String,
    events: Vec<String>,
    sections: Vec<String>,
    secrets: usize,
    /// How many of them are sealed with the installation's key.
    sealed: usize,
    disabled: bool,
    /// The alarm server sends `received` itself; else its 2xx to a
    /// `call.alert` is the receipt of the recipients with a device.
    confirms_delivery: bool,
    /// May reach the home's network or this machine (`--private-network`).
    private_network: bool,
    failing_since: Option<String>,
    created_at: String,
}

impl EndpointRow {
    fn new(endpoint: &Endpoint, out: Output) -> Self {
        EndpointRow {
            id: endpoint.id.clone(),
            name: endpoint.name.clone(),
            url: endpoint.url.clone(),
            events: endpoint
                .events
                .iter()
                .map(|t| t.as_str().to_string())
                .collect(),
            sections: endpoint.sections.clone(),
            secrets: endpoint.secrets.len(),
            sealed: endpoint.secrets.iter().filter(|s| is_sealed(s)).count(),
            disabled: endpoint.disabled,
            confirms_delivery: endpoint.confirms_delivery,
            private_network: endpoint.private_network,
            failing_since: endpoint.failing_since.map(|t| out.time(t)),
            created_at: out.time(endpoint.created_at),
        }
    }
}

/// What `create` was asked for.
struct Asked<'a> {
    url: &'a str,
    name: Option<&'a str>,
    events: &'a [String],
    sections: &'a [String],
    confirms_delivery: bool,
    private_network: bool,
}

async fn create(
    store: &dyn WebhookStore,
    sealer: &dyn Sealer,
    out: Output,
    asked: Asked<'_>,
) -> Outcome {
    let Asked {
        url,
        name,
        events,
        sections,
        confirms_delivery,
        private_network,
    } = asked;
    let url = check_url(url).map_err(|problem| Failure::refused(format!("--url {problem}")))?;
    if !private_network {
        crate::private_network::refuse_inside(&url).await?;
    }
    let name = match name {
        Some(name) => admin_text("--name", name).map_err(Failure::refused)?,
        None => default_name(&url),
    };
    let mut types = Vec::new();
    for event in events {
        let kind = EventType::parse(event.trim()).ok_or_else(|| {
            let known: Vec<&str> = EventType::ALL.iter().map(|t| t.as_str()).collect();
            Failure::refused(format!(
                "--event {event:?} is not an event type; one of: {}",
                known.join(", ")
            ))
        })?;
        if !types.contains(&kind) {
            types.push(kind);
        }
    }
    let mut checked_sections: Vec<String> = Vec::new();
    for section in sections {
        let section = admin_text("--section", section).map_err(Failure::refused)?;
        if !checked_sections.contains(&section) {
            checked_sections.push(section);
        }
    }
    let id = format!("ep_{}", uuid::Uuid::new_v4().simple());
    let (secret, stored) = new_sealed_secret(sealer, &id).await?;
    let endpoint = Endpoint {
        id,
        name,
        url,
        events: types,
        sections: checked_sections,
        secrets: vec![stored],
        disabled: false,
        created_at: clock::now(),
        failing_since: None,
        confirms_delivery,
        private_network,
    };
    store.create_endpoint(&endpoint).await?;
    IssuedSecret {
        id: endpoint.id,
        name: endpoint.name,
        url: endpoint.url,
        secret,
        secrets: 1,
    }
    .print(out);
    Ok(())
}

async fn list(store: &dyn WebhookStore, out: Output) -> Outcome {
    let rows: Vec<EndpointRow> = store
        .endpoints()
        .await?
        .iter()
        .map(|e| EndpointRow::new(e, out))
        .collect();
    out.print(&rows, |rows| {
        let cells: Vec<Vec<String>> = rows
            .iter()
            .map(|e| {
                let all = |list: &[String], everything: &str| {
                    if list.is_empty() {
                        everything.to_string()
                    } else {
                        list.join(", ")
                    }
                };
                vec![
                    e.id.clone(),
                    e.name.clone(),
                    e.url.clone(),
                    all(&e.events, "(every type)"),
                    all(&e.sections, "(whole house)"),
                    if e.confirms_delivery {
                        "received".to_string()
                    } else {
                        "2xx".to_string()
                    },
                    if e.private_network {
                        "private".to_string()
                    } else {
                        "public".to_string()
                    },
                    match e.sealed {
                        0 => e.secrets.to_string(),
                        n if n == e.secrets => format!("{n} sealed"),
                        n => format!("{} ({n} sealed)", e.secrets),
                    },
                    if e.disabled {
                        "disabled".to_string()
                    } else {
                        match &e.failing_since {
                            Some(since) => format!("failing since {since}"),
                            None => "ok".to_string(),
                        }
                    },
                    e.created_at.clone(),
                ]
            })
            .collect();
        table(
            &[
                "ID", "NAME", "URL", "EVENTS", "SECTIONS", "RECEIPTS", "NETWORK", "SECRETS",
                "STATE", "CREATED",
            ],
            &cells,
        )
    });
    Ok(())
}

async fn known(store: &dyn WebhookStore, id: &str) -> Result<Endpoint, Failure> {
    let id = id.trim();
    store
        .endpoints()
        .await?
        .into_iter()
        .find(|e| e.id == id)
        .ok_or_else(|| unknown(id))
}

fn unknown(id: &str) -> Failure {
    Failure::refused(format!(
        "no endpoint with id {id} (see `nurse-call-admin webhooks list`)"
    ))
}

async fn rotate(store: &dyn WebhookStore, sealer: &dyn Sealer, out: Output, id: &str) -> Outcome {
    let mut endpoint = known(store, id).await?;
    if endpoint.secrets.len() >= 2 {
        return Err(Failure::refused(format!(
            "endpoint {} has two secrets already; `retire-secret` the older first",
            endpoint.id
        )));
    }
    let (secret, stored) = new_sealed_secret(sealer, &endpoint.id).await?;
    endpoint.secrets.push(stored);
    if !store.update_endpoint(&endpoint).await? {
        return Err(unknown(&endpoint.id));
    }
    IssuedSecret {
        secrets: endpoint.secrets.len(),
        id: endpoint.id,
        name: endpoint.name,
        url: endpoint.url,
        secret,
    }
    .print(out);
    Ok(())
}

async fn change(
    store: &dyn WebhookStore,
    out: Output,
    id: &str,
    done: &str,
    edit: impl FnOnce(&mut Endpoint) -> Result<(), Failure>,
) -> Outcome {
    let mut endpoint = known(store, id).await?;
    edit(&mut endpoint)?;
    if !store.update_endpoint(&endpoint).await? {
        return Err(unknown(&endpoint.id));
    }
    let row = EndpointRow::new(&endpoint, out);
    out.print(&row, |row| {
        format!("{done} endpoint {} ({}).\n", row.id, row.name)
    });
    Ok(())
}

async fn delete(store: &dyn WebhookStore, out: Output, id: &str) -> Outcome {
    let endpoint = known(store, id).await?;
    if !store.delete_endpoint(&endpoint.id).await? {
        return Err(unknown(&endpoint.id));
    }
    let row = EndpointRow::new(&endpoint, out);
    out.print(&row, |row| {
        format!(
            "Deleted endpoint {} ({}); its delivery log stays until it expires.\n",
            row.id, row.name
        )
    });
    Ok(())
}

#[derive(Serialize)]
struct AttemptRow {
    at: String,
    endpoint: String,
    event: String,
    event_type: String,
    call: Option<i64>,
    attempt: u32,
    status: Option<u16>,
    outcome: String,
    /// `delivered`, `retry` or `given_up`.
    end: &'static str,
    retry_at: Option<String>,
    reason: Option<String>,
}

impl AttemptRow {
    fn new(attempt: &Attempt, out: Output) -> Self {
        let (end, retry_at, reason) = match &attempt.end {
            AttemptEnd::Delivered => ("delivered", None, None),
            AttemptEnd::RetryAt(at) => ("retry", Some(out.time(*at)), None),
            AttemptEnd::GivenUp(reason) => ("given_up", None, Some(reason.clone())),
        };
        AttemptRow {
            at: out.time(attempt.at),
            endpoint: attempt.endpoint_id.clone(),
            event: attempt.event_id.clone(),
            event_type: attempt.event_type.clone(),
            call: attempt.call_id,
            attempt: attempt.number,
            status: attempt.status,
            outcome: attempt.outcome.clone(),
            end,
            retry_at,
            reason,
        }
    }
}

async fn deliveries(store: &dyn WebhookStore, out: Output, failed: bool, limit: usize) -> Outcome {
    let since = clock::now() - Duration::days(LOG_DAYS);
    let rows: Vec<AttemptRow> = store
        .deliveries(since, failed, limit)
        .await?
        .iter()
        .map(|a| AttemptRow::new(a, out))
        .collect();
    out.print(&rows, |rows| {
        let cells: Vec<Vec<String>> = rows
            .iter()
            .map(|a| {
                vec![
                    a.at.clone(),
                    a.endpoint.clone(),
                    a.event_type.clone(),
                    or_dash(a.call.map(|c| c.to_string()).as_deref()),
                    a.attempt.to_string(),
                    a.outcome.clone(),
                    match (&a.retry_at, &a.reason) {
                        (Some(at), _) => format!("retry at {at}"),
                        (_, Some(reason)) => format!("given up: {reason}"),
                        _ => a.end.to_string(),
                    },
                    a.event.clone(),
                ]
            })
            .collect();
        table(
            &[
                "AT", "ENDPOINT", "TYPE", "CALL", "ATTEMPT", "OUTCOME", "END", "EVENT",
            ],
            &cells,
        )
    });
    Ok(())
}
