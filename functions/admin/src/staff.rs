//! `staff …`: the people alarms reach (DECISIONS §14): register them, rotate
//! and revoke their tokens, erase them.
//!
//! A token is printed exactly once, by `create` or `rotate`, with the link of
//! the staff page (`/staff#token=…`); the store keeps only its SHA-256. A
//! rotated-away or revoked token stops working at once. `erase` deletes the
//! person's record and duty (their name is personal data, DSGVO Art. 17).

use chrono::{DateTime, Utc};
use clap::Subcommand;
use serde::Serialize;

use nurse_call_core::{
    AlarmStore, Backend, Scope, StaffSettings, admin_text,
    alarm::{Duty, Staff},
    clock, is_uuid, parse_receipt_seconds,
    push::{Device, DeviceState, all_silent, device_state},
    tokens::{new_staff, new_token, staff_page_link, token_hash},
};

use crate::failure::{Failure, Outcome};
use crate::output::{Output, fields, or_dash, table};

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Register a staff member and print their id, token and page link
    /// (the token is shown only this once).
    Create {
        /// Their name as colleagues and displays show it, e.g. "Anna K.".
        #[arg(long)]
        name: String,
        /// A group they belong to, for `group:<name>` levels (repeat for
        /// several), e.g. Leitung, Technik.
        #[arg(long = "group")]
        groups: Vec<String>,
        /// Their DECT handset or pager, passed to alarm servers.
        #[arg(long)]
        device: Option<String>,
    },
    /// List the staff: id, name, groups, device, duty, created, revoked (never a
    /// token), and each person's phones with their state (DECISIONS §18):
    /// "Telefon stumm" for a person on duty whose phones are all silent.
    List {
        /// Seconds a phone may take to confirm a push (as the service's).
        #[arg(long, env = "RECEIPT_SECONDS", default_value = StaffSettings::DEFAULT_RECEIPT_SECONDS,
              value_parser = parse_receipt_seconds)]
        receipt_seconds: i64,
    },
    /// Give a staff member a new token and print it; the old token stops working at once.
    Rotate {
        /// The staff member's id (UUID).
        id: String,
    },
    /// Revoke a staff member: their token is refused (401) and their duty ends.
    Revoke {
        /// The staff member's id (UUID).
        id: String,
    },
    /// Erase a staff member: their record and duty are deleted (personal data).
    Erase {
        /// The staff member's id (UUID).
        id: String,
    },
}

pub(crate) async fn run(command: Command, store: &dyn Backend, out: Output) -> Outcome {
    match command {
        Command::Create {
            name,
            groups,
            device,
        } => create(store, out, &name, &groups, device.as_deref()).await,
        Command::List { receipt_seconds } => list(store, out, receipt_seconds).await,
        Command::Rotate { id } => rotate(store, out, &id).await,
        Command::Revoke { id } => revoke(store, out, &id).await,
        Command::Erase { id } => erase(store, out, &id).await,
    }
}

/// The printable record of a staff member: never their token or its hash.
#[derive(Serialize)]
struct StaffRow {
    id: String,
    name: String,
    groups: Vec<String>,
    device: Option<String>,
    /// Their duty now, if they are signed on.
    duty: Option<DutyRow>,
    created_at: String,
    revoked: bool,
    /// Their phones (push subscriptions) and each one's state (§18); left
    /// out where not read (revoke's answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    devices: Option<Vec<DeviceRow>>,
    /// On duty with phones that are all silent: "Telefon stumm" (§18).
    #[serde(skip_serializing_if = "Option::is_none")]
    phone_silent: Option<bool>,
}

#[derive(Serialize)]
struct DeviceRow {
    /// The device's tag, as `GET /api/v1/staff/me` names it.
    id: String,
    created_at: String,
    last_receipt_at: Option<String>,
    state: &'static str,
}

#[derive(Serialize)]
struct DutyRow {
    /// Section codes; empty = the whole house.
    sections: Vec<String>,
    until: String,
}

impl StaffRow {
    fn new(staff: &Staff, duty: Option<&Duty>, out: Output) -> Self {
        StaffRow {
            id: staff.id.clone(),
            name: staff.name.clone(),
            groups: staff.groups.clone(),
            device: staff.device.clone(),
            duty: duty.map(|d| DutyRow {
                sections: d.sections.clone(),
                until: out.time(d.until),
            }),
            created_at: out.time(staff.created_at),
            revoked: staff.revoked,
            devices: None,
            phone_silent: None,
        }
    }

    /// The same row with the person's devices, their states at `now`.
    fn with_devices(
        self,
        devices: &[Device],
        now: DateTime<Utc>,
        receipt_seconds: i64,
        out: Output,
    ) -> Self {
        let states: Vec<DeviceState> = devices
            .iter()
            .map(|device| device_state(device, now, receipt_seconds))
            .collect();
        StaffRow {
            phone_silent: Some(self.duty.is_some() && all_silent(&states)),
            devices: Some(
                devices
                    .iter()
                    .zip(&states)
                    .map(|(device, state)| DeviceRow {
                        id: device.tag(),
                        created_at: out.time(device.created_at),
                        last_receipt_at: device.received_at.map(|at| out.time(at)),
                        state: state.as_str(),
                    })
                    .collect(),
            ),
            ..self
        }
    }

    /// The phones cell: each device's id and state; "Telefon stumm" first
    /// when they are all silent while on duty.
    fn phones_cell(&self) -> String {
        let devices = self.devices.as_deref().unwrap_or_default();
        if devices.is_empty() {
            return "-".to_string();
        }
        let list = devices
            .iter()
            .map(|d| format!("{} {}", d.id, d.state))
            .collect::<Vec<_>>()
            .join(", ");
        if self.phone_silent == Some(true) {
            format!("Telefon stumm: {list}")
        } else {
            list
        }
    }
}

/// The one output that carries a token.
#[derive(Serialize)]
struct IssuedToken {
    id: String,
    name: String,
    groups: Vec<String>,
    device: Option<String>,
    token: String,
    page: String,
}

impl IssuedToken {
    fn new(staff: Staff, token: String) -> Self {
        IssuedToken {
            page: staff_page_link(&token),
            id: staff.id,
            name: staff.name,
            groups: staff.groups,
            device: staff.device,
            token,
        }
    }

    fn print(&self, out: Output) {
        out.print(self, |issued| {
            fields(&[
                ("staff", issued.id.clone()),
                ("name", issued.name.clone()),
                ("token", issued.token.clone()),
                ("page", issued.page.clone()),
            ])
        });
        out.note(
            "The token is shown only now. Open the page above on the person's phone \
             (docs/alarms.md); apps send it as `Authorization: Bearer <token>`.",
        );
    }
}

async fn create(
    store: &dyn AlarmStore,
    out: Output,
    name: &str,
    groups: &[String],
    device: Option<&str>,
) -> Outcome {
    let name = admin_text("--name", name).map_err(Failure::refused)?;
    let mut checked_groups: Vec<String> = Vec::new();
    for group in groups {
        let group = admin_text("--group", group).map_err(Failure::refused)?;
        if !checked_groups.contains(&group) {
            checked_groups.push(group);
        }
    }
    let device = device
        .map(|device| admin_text("--device", device))
        .transpose()
        .map_err(Failure::refused)?;
    let (staff, token) = new_staff(
        &Scope::installation(),
        &name,
        &checked_groups,
        device.as_deref(),
        clock::now(),
    )
    .map_err(|e| Failure::refused(format!("the OS random source failed: {e}")))?;
    store.create_staff(&staff).await?;
    IssuedToken::new(staff, token).print(out);
    Ok(())
}

async fn list(store: &dyn Backend, out: Output, receipt_seconds: i64) -> Outcome {
    let scope = Scope::installation();
    let staff = store.staff_of(&scope).await?;
    let now = Utc::now();
    let duties = store.duties(&scope, now).await?;
    let mut rows: Vec<StaffRow> = Vec::with_capacity(staff.len());
    for s in &staff {
        let devices = store.push_devices(&s.id).await?;
        rows.push(
            StaffRow::new(s, duties.iter().find(|d| d.staff_id == s.id), out).with_devices(
                &devices,
                now,
                receipt_seconds,
                out,
            ),
        );
    }
    out.print(&rows, |rows| {
        let cells: Vec<Vec<String>> = rows
            .iter()
            .map(|s| {
                vec![
                    s.id.clone(),
                    s.name.clone(),
                    s.groups.join(", "),
                    or_dash(s.device.as_deref()),
                    match &s.duty {
                        None => "-".to_string(),
                        Some(duty) if duty.sections.is_empty() => "(whole house)".to_string(),
                        Some(duty) => duty.sections.join(", "),
                    },
                    s.created_at.clone(),
                    if s.revoked { "yes" } else { "no" }.to_string(),
                    s.phones_cell(),
                ]
            })
            .collect();
        table(
            &[
                "ID", "NAME", "GROUPS", "DEVICE", "ON DUTY", "CREATED", "REVOKED", "PHONES",
            ],
            &cells,
        )
    });
    Ok(())
}

async fn rotate(store: &dyn AlarmStore, out: Output, id: &str) -> Outcome {
    let staff = known(store, id).await?;
    if staff.revoked {
        return Err(Failure::refused(format!(
            "staff member {} is revoked; create a new one instead",
            staff.id
        )));
    }
    let token =
        new_token().map_err(|e| Failure::refused(format!("the OS random source failed: {e}")))?;
    if !store
        .replace_staff_token(&staff.id, &token_hash(&token))
        .await?
    {
        return Err(unknown(&staff.id));
    }
    IssuedToken::new(staff, token).print(out);
    Ok(())
}

async fn revoke(store: &dyn AlarmStore, out: Output, id: &str) -> Outcome {
    let staff = known(store, id).await?;
    if !store.revoke_staff(&staff.id).await? {
        return Err(unknown(&staff.id));
    }
    let row = StaffRow::new(
        &Staff {
            revoked: true,
            ..staff
        },
        None,
        out,
    );
    out.print(&row, |row| {
        format!(
            "Revoked staff member {}; their token is refused and their duty ended.\n",
            row.id
        )
    });
    Ok(())
}

async fn erase(store: &dyn AlarmStore, out: Output, id: &str) -> Outcome {
    let staff = known(store, id).await?;
    if !store.erase_staff(&staff.id).await? {
        return Err(unknown(&staff.id));
    }
    #[derive(Serialize)]
    struct Erased {
        id: String,
        erased: bool,
    }
    out.print(
        &Erased {
            id: staff.id,
            erased: true,
        },
        |erased| {
            format!(
                "Erased staff member {}: their record, token and duty are deleted.\n",
                erased.id
            )
        },
    );
    Ok(())
}

fn unknown(id: &str) -> Failure {
    Failure::refused(format!(
        "no staff member with id {id} (see `nurse-call-admin staff list`)"
    ))
}

async fn known(store: &dyn AlarmStore, id: &str) -> Result<Staff, Failure> {
    let id = id.trim().to_ascii_lowercase();
    if !is_uuid(&id) {
        return Err(Failure::refused(format!(
            "{id:?} is not a staff id (a UUID, see `nurse-call-admin staff list`)"
        )));
    }
    store.staff_member(&id).await?.ok_or_else(|| unknown(&id))
}
