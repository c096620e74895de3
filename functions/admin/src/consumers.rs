//! `consumers …`: issue, list, rotate and revoke the consumers (central
//! systems, radio gateways) that may send signed requests (DECISIONS §2, §8a).
//!
//! A secret is printed exactly once, by `create` or `rotate`; nothing else
//! ever shows one. Rotation without downtime: `rotate` (both secrets verify),
//! give the new secret to the central system, then `retire-secret`.

use clap::Subcommand;
use serde::Serialize;

use nurse_call_core::{
    AdminStore, Backend, Consumer, SecretsReplaced, admin_text, clock, is_uuid,
    links::{self, Link},
    secrets,
    secrets::MAX_SECRETS,
};

use crate::failure::{Failure, Outcome};
use crate::output::{Output, fields, or_dash, table};

/// How long the Lambda functions may keep using a consumer record they cached.
const CACHE_NOTE: &str = "The Lambda functions cache consumers for up to 60 s; \
                          the local server sees the change at once.";

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Issue a consumer and print its id and secret (shown only this once).
    Create {
        /// Who uses it, e.g. "Zentrale Station 1".
        #[arg(long)]
        name: String,
        /// Also accept HMAC-SHA1 signatures (legacy central systems only).
        #[arg(long)]
        sha1: bool,
        /// Replay protection: every request must carry a signed `signed_at`
        /// within 300 s of the server's clock (docs/security.md).
        #[arg(long)]
        require_signed_time: bool,
    },
    /// List the consumers: id, name, number of secrets, SHA-1, created (never a secret).
    List,
    /// Add a second secret and print it; both secrets verify until `retire-secret`.
    Rotate {
        /// The consumer's id (UUID).
        id: String,
    },
    /// Drop the older of the two secrets; only the newest verifies afterwards.
    RetireSecret {
        /// The consumer's id (UUID).
        id: String,
    },
    /// Switch replay protection on or off: with `on`, requests without a
    /// signed `signed_at` within 300 s are refused (docs/security.md).
    SignedTime {
        /// The consumer's id (UUID).
        id: String,
        #[arg(value_enum)]
        setting: Switch,
    },
    /// Change a consumer's settings: `--heartbeat SECONDS` (30 to 3600)
    /// supervises its link (DECISIONS §19: silent after 2 × SECONDS + 10 s
    /// without a request), `--heartbeat none` stops that.
    Set {
        /// The consumer's id (UUID).
        id: String,
        /// The heartbeat interval in seconds (30 to 3600), or `none`.
        #[arg(long, value_parser = parse_heartbeat)]
        heartbeat: Heartbeat,
    },
    /// Remove a consumer: its requests are refused (400 invalid_hash) from then on.
    Revoke {
        /// The consumer's id (UUID).
        id: String,
    },
}

/// `--heartbeat`: an interval in seconds, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Heartbeat(Option<i64>);

fn parse_heartbeat(text: &str) -> Result<Heartbeat, String> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("none") {
        return Ok(Heartbeat(None));
    }
    match text.parse::<i64>() {
        Ok(seconds) if links::is_heartbeat_interval(seconds) => Ok(Heartbeat(Some(seconds))),
        _ => Err(format!(
            "{text:?} is no heartbeat: seconds from {} to {}, or `none`",
            links::MIN_HEARTBEAT_SECONDS,
            links::MAX_HEARTBEAT_SECONDS
        )),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Switch {
    On,
    Off,
}

/// `store` is the whole backend: creating a consumer is the one operation the
/// admin shares with the sandbox ([`SandboxStore::create_consumer`]).
pub(crate) async fn run(command: Command, store: &dyn Backend, out: Output) -> Outcome {
    match command {
        Command::Create {
            name,
            sha1,
            require_signed_time,
        } => create(store, out, &name, sha1, require_signed_time).await,
        Command::SignedTime { id, setting } => signed_time(store, out, &id, setting).await,
        Command::List => list(store, out).await,
        Command::Rotate { id } => rotate(store, out, &id).await,
        Command::RetireSecret { id } => retire_secret(store, out, &id).await,
        Command::Set { id, heartbeat } => set(store, out, &id, heartbeat).await,
        Command::Revoke { id } => revoke(store, out, &id).await,
    }
}

/// The printable record of a consumer: counts, never secrets.
#[derive(Serialize)]
struct ConsumerRow {
    id: String,
    name: String,
    secrets: usize,
    allow_sha1: bool,
    require_signed_time: bool,
    created_at: String,
    /// Sandbox visitors only.
    expires_at: Option<String>,
    /// Its heartbeat interval in seconds (DECISIONS §19); `None`: not supervised.
    heartbeat_seconds: Option<i64>,
    /// Its last sign of life (`list` only, supervised consumers only).
    #[serde(skip_serializing_if = "Option::is_none")]
    last_seen_at: Option<String>,
    /// Since when it is silent (its last request before), while it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    silent_since: Option<String>,
}

impl ConsumerRow {
    fn new(consumer: &Consumer, out: Output) -> Self {
        ConsumerRow {
            id: consumer.id.clone(),
            name: consumer.name.clone(),
            secrets: consumer.secrets.len(),
            allow_sha1: consumer.allow_sha1,
            require_signed_time: consumer.require_signed_time,
            created_at: out.time(consumer.created_at),
            expires_at: consumer.expires_at.map(|t| out.time(t)),
            heartbeat_seconds: consumer.heartbeat_seconds,
            last_seen_at: None,
            silent_since: None,
        }
    }

    /// The row with what the store keeps of its link.
    fn with_link(mut self, link: Option<&Link>, out: Output) -> Self {
        if let Some(link) = link {
            self.last_seen_at = Some(out.time(link.last_seen_at));
            self.silent_since = link.silence.as_ref().map(|s| out.time(s.since));
        }
        self
    }
}

/// The one output that carries a secret.
#[derive(Serialize)]
struct IssuedSecret {
    id: String,
    name: String,
    secret: String,
    /// How many secrets verify now (1 after create, 2 after rotate).
    secrets: usize,
    allow_sha1: bool,
}

async fn create(
    store: &dyn Backend,
    out: Output,
    name: &str,
    sha1: bool,
    require_signed_time: bool,
) -> Outcome {
    let name = admin_text("--name", name).map_err(Failure::refused)?;
    let consumer = secrets::new_consumer(&name, sha1, require_signed_time, clock::now())
        .map_err(|e| Failure::refused(format!("the OS random source failed: {e}")))?;
    store.create_consumer(&consumer).await?;
    out.print(
        &IssuedSecret {
            id: consumer.id.clone(),
            name: consumer.name.clone(),
            secret: consumer.secrets[0].clone(),
            secrets: 1,
            allow_sha1: consumer.allow_sha1,
        },
        |issued| {
            fields(&[
                ("consumer", issued.id.clone()),
                ("secret", issued.secret.clone()),
            ])
        },
    );
    out.note(
        "The secret is shown only now: give it to the central system over a safe channel. \
         It signs requests with HMAC-SHA256 of `<target>.<consumer>.<data_json>`.",
    );
    Ok(())
}

async fn list(store: &dyn Backend, out: Output) -> Outcome {
    let links = store.links().await?;
    let rows: Vec<ConsumerRow> = store
        .consumers()
        .await?
        .iter()
        .map(|c| {
            let link = links.iter().find(|link| link.consumer == c.id);
            ConsumerRow::new(c, out).with_link(link, out)
        })
        .collect();
    out.print(&rows, |rows| {
        let cells: Vec<Vec<String>> = rows
            .iter()
            .map(|c| {
                vec![
                    c.id.clone(),
                    c.name.clone(),
                    c.secrets.to_string(),
                    if c.allow_sha1 { "yes" } else { "no" }.to_string(),
                    if c.require_signed_time { "yes" } else { "no" }.to_string(),
                    c.created_at.clone(),
                    or_dash(c.expires_at.as_ref()),
                    or_dash(c.heartbeat_seconds.map(|s| format!("{s} s")).as_ref()),
                    match (&c.last_seen_at, &c.silent_since) {
                        (_, Some(since)) => format!("SILENT since {since}"),
                        (Some(seen), None) => seen.clone(),
                        (None, None) => "-".to_string(),
                    },
                ]
            })
            .collect();
        table(
            &[
                "ID",
                "NAME",
                "SECRETS",
                "SHA1",
                "SIGNED TIME",
                "CREATED",
                "EXPIRES",
                "HEARTBEAT",
                "LAST SEEN",
            ],
            &cells,
        )
    });
    Ok(())
}

async fn rotate(store: &dyn AdminStore, out: Output, id: &str) -> Outcome {
    let consumer = known(store, id).await?;
    if consumer.secrets.len() >= MAX_SECRETS {
        return Err(Failure::refused(format!(
            "consumer {} already has {MAX_SECRETS} secrets; retire the older one first \
             (consumers retire-secret {})",
            consumer.id, consumer.id
        )));
    }
    let secret = secrets::new_consumer_secret()
        .map_err(|e| Failure::refused(format!("the OS random source failed: {e}")))?;
    let mut secrets = consumer.secrets.clone();
    secrets.push(secret.clone());
    replace(store, &consumer, &secrets).await?;
    out.print(
        &IssuedSecret {
            id: consumer.id.clone(),
            name: consumer.name.clone(),
            secret,
            secrets: secrets.len(),
            allow_sha1: consumer.allow_sha1,
        },
        |issued| {
            fields(&[
                ("consumer", issued.id.clone()),
                ("new secret", issued.secret.clone()),
            ])
        },
    );
    out.note(&format!(
        "The new secret is shown only now. Both secrets verify until you retire the old one:\n\
         give the new secret to the central system, then run\n  \
         nurse-call-admin consumers retire-secret {}",
        consumer.id
    ));
    Ok(())
}

async fn retire_secret(store: &dyn AdminStore, out: Output, id: &str) -> Outcome {
    let consumer = known(store, id).await?;
    if consumer.secrets.len() < 2 {
        return Err(Failure::refused(format!(
            "consumer {} has only one secret; nothing to retire (rotate first)",
            consumer.id
        )));
    }
    let secrets = consumer.secrets[1..].to_vec();
    replace(store, &consumer, &secrets).await?;
    let row = ConsumerRow::new(
        &Consumer {
            secrets,
            ..consumer
        },
        out,
    );
    out.print(&row, |row| {
        format!(
            "Retired the older secret of consumer {}; only the newest verifies now.\n",
            row.id
        )
    });
    out.note(CACHE_NOTE);
    Ok(())
}

async fn signed_time(store: &dyn AdminStore, out: Output, id: &str, setting: Switch) -> Outcome {
    let id = consumer_id(id)?;
    let required = setting == Switch::On;
    if !store.set_require_signed_time(&id, required).await? {
        return Err(unknown(&id));
    }
    let consumer = known(store, &id).await?;
    out.print(&ConsumerRow::new(&consumer, out), |row| {
        if row.require_signed_time {
            format!(
                "Consumer {} must now sign `signed_at` (within 300 s) on every request.\n",
                row.id
            )
        } else {
            format!(
                "Consumer {} may send requests without `signed_at` again.\n",
                row.id
            )
        }
    });
    out.note(CACHE_NOTE);
    Ok(())
}

async fn set(store: &dyn AdminStore, out: Output, id: &str, heartbeat: Heartbeat) -> Outcome {
    let id = consumer_id(id)?;
    if !store.set_heartbeat(&id, heartbeat.0, clock::now()).await? {
        return Err(unknown(&id));
    }
    let consumer = known(store, &id).await?;
    out.print(&ConsumerRow::new(&consumer, out), |row| {
        match row.heartbeat_seconds {
            Some(seconds) => format!(
                "Consumer {} is supervised: silent after {} s without a request \
             (2 × {seconds} s + {} s).\n",
                row.id,
                links::silent_after(chrono::DateTime::UNIX_EPOCH, seconds).timestamp(),
                links::GRACE_SECONDS
            ),
            None => format!("Consumer {} is no longer supervised.\n", row.id),
        }
    });
    out.note(CACHE_NOTE);
    Ok(())
}

async fn revoke(store: &dyn AdminStore, out: Output, id: &str) -> Outcome {
    let id = consumer_id(id)?;
    // A silence it is in ends now, so the report's table does not show it
    // lasting forever (DECISIONS §19); its link goes with it.
    store.set_heartbeat(&id, None, clock::now()).await?;
    if !store.delete_consumer(&id).await? {
        return Err(unknown(&id));
    }
    #[derive(Serialize)]
    struct Revoked {
        id: String,
        revoked: bool,
    }
    out.print(&Revoked { id, revoked: true }, |r| {
        format!("Revoked consumer {}.\n", r.id)
    });
    out.note(CACHE_NOTE);
    Ok(())
}

/// A consumer id as stored: a UUID, lowercase.
fn consumer_id(id: &str) -> Result<String, Failure> {
    let id = id.trim();
    if !is_uuid(id) {
        return Err(Failure::refused(format!(
            "{id:?} is not a consumer id (a UUID such as 6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f)"
        )));
    }
    Ok(id.to_ascii_lowercase())
}

fn unknown(id: &str) -> Failure {
    Failure::refused(format!(
        "no consumer with id {id} (see `nurse-call-admin consumers list`)"
    ))
}

async fn known(store: &dyn AdminStore, id: &str) -> Result<Consumer, Failure> {
    let id = consumer_id(id)?;
    store.consumer(&id).await?.ok_or_else(|| unknown(&id))
}

async fn replace(store: &dyn AdminStore, consumer: &Consumer, secrets: &[String]) -> Outcome {
    match store
        .replace_secrets(&consumer.id, &consumer.secrets, secrets)
        .await?
    {
        SecretsReplaced::Replaced => Ok(()),
        SecretsReplaced::UnknownConsumer => Err(unknown(&consumer.id)),
        SecretsReplaced::Changed => Err(Failure::refused(format!(
            "the secrets of consumer {} changed meanwhile (another admin?); nothing was \
             written, run the command again",
            consumer.id
        ))),
    }
}
