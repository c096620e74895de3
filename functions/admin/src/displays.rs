//! `displays …`: register the displays that read the open calls (corridor
//! screens, the station's PC, display apps; DECISIONS §11), rotate and revoke
//! their tokens.
//!
//! A token is printed exactly once, by `create` or `rotate`; the store keeps
//! only its SHA-256. A rotated-away or revoked token stops working at once
//! (displays are not cached).

use clap::Subcommand;
use serde::Serialize;

use nurse_call_core::{
    AdminStore, Display, admin_text, clock, is_uuid,
    tokens::{new_display, new_token, token_hash},
};

use crate::failure::{Failure, Outcome};
use crate::output::{Output, fields, table};

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Register a display and print its id and token (shown only this once).
    Create {
        /// Where it hangs, e.g. "Flur Station 2".
        #[arg(long)]
        name: String,
        /// A section it shows (repeat for several); none = every section.
        #[arg(long = "section")]
        sections: Vec<String>,
    },
    /// List the displays: id, name, sections, created, revoked (never a token).
    List,
    /// Give a display a new token and print it; the old token stops working at once.
    Rotate {
        /// The display's id (UUID).
        id: String,
    },
    /// Revoke a display: its token is refused (401) from then on.
    Revoke {
        /// The display's id (UUID).
        id: String,
    },
}

pub(crate) async fn run(command: Command, store: &dyn AdminStore, out: Output) -> Outcome {
    match command {
        Command::Create { name, sections } => create(store, out, &name, &sections).await,
        Command::List => list(store, out).await,
        Command::Rotate { id } => rotate(store, out, &id).await,
        Command::Revoke { id } => revoke(store, out, &id).await,
    }
}

/// The printable record of a display: never its token or the token's hash.
#[derive(Serialize)]
struct DisplayRow {
    id: String,
    name: String,
    sections: Vec<String>,
    created_at: String,
    revoked: bool,
}

impl DisplayRow {
    fn new(display: &Display, out: Output) -> Self {
        DisplayRow {
            id: display.id.clone(),
            name: display.name.clone(),
            sections: display.sections.clone(),
            created_at: out.time(display.created_at),
            revoked: display.revoked,
        }
    }
}

/// The one output that carries a token.
#[derive(Serialize)]
struct IssuedToken {
    id: String,
    name: String,
    sections: Vec<String>,
    token: String,
}

impl IssuedToken {
    fn print(&self, out: Output) {
        out.print(self, |issued| {
            fields(&[
                ("display", issued.id.clone()),
                ("token", issued.token.clone()),
                ("page", format!("/display#token={}", issued.token)),
            ])
        });
        out.note(
            "The token is shown only now. Open the page above on the display \
             (docs/displays.md); apps send it as `Authorization: Bearer <token>`.",
        );
    }
}

async fn create(store: &dyn AdminStore, out: Output, name: &str, sections: &[String]) -> Outcome {
    let name = admin_text("--name", name).map_err(Failure::refused)?;
    let sections = sections
        .iter()
        .map(|section| admin_text("--section", section))
        .collect::<Result<Vec<_>, _>>()
        .map_err(Failure::refused)?;
    let (display, token) = new_display(&name, &sections, clock::now())
        .map_err(|e| Failure::refused(format!("the OS random source failed: {e}")))?;
    store.create_display(&display).await?;
    IssuedToken {
        id: display.id,
        name: display.name,
        sections: display.sections,
        token,
    }
    .print(out);
    Ok(())
}

async fn list(store: &dyn AdminStore, out: Output) -> Outcome {
    let rows: Vec<DisplayRow> = store
        .displays()
        .await?
        .iter()
        .map(|d| DisplayRow::new(d, out))
        .collect();
    out.print(&rows, |rows| {
        let cells: Vec<Vec<String>> = rows
            .iter()
            .map(|d| {
                vec![
                    d.id.clone(),
                    d.name.clone(),
                    if d.sections.is_empty() {
                        "(all)".to_string()
                    } else {
                        d.sections.join(", ")
                    },
                    d.created_at.clone(),
                    if d.revoked { "yes" } else { "no" }.to_string(),
                ]
            })
            .collect();
        table(&["ID", "NAME", "SECTIONS", "CREATED", "REVOKED"], &cells)
    });
    Ok(())
}

async fn rotate(store: &dyn AdminStore, out: Output, id: &str) -> Outcome {
    let display = known(store, id).await?;
    if display.revoked {
        return Err(Failure::refused(format!(
            "display {} is revoked; create a new one instead",
            display.id
        )));
    }
    let token =
        new_token().map_err(|e| Failure::refused(format!("the OS random source failed: {e}")))?;
    if !store
        .replace_display_token(&display.id, &token_hash(&token))
        .await?
    {
        return Err(unknown(&display.id));
    }
    IssuedToken {
        id: display.id,
        name: display.name,
        sections: display.sections,
        token,
    }
    .print(out);
    Ok(())
}

async fn revoke(store: &dyn AdminStore, out: Output, id: &str) -> Outcome {
    let display = known(store, id).await?;
    if !store.revoke_display(&display.id).await? {
        return Err(unknown(&display.id));
    }
    let row = DisplayRow::new(
        &Display {
            revoked: true,
            ..display
        },
        out,
    );
    out.print(&row, |row| {
        format!(
            "Revoked display {}; its token is refused from now on.\n",
            row.id
        )
    });
    Ok(())
}

fn unknown(id: &str) -> Failure {
    Failure::refused(format!(
        "no display with id {id} (see `nurse-call-admin displays list`)"
    ))
}

async fn known(store: &dyn AdminStore, id: &str) -> Result<Display, Failure> {
    let id = id.trim().to_ascii_lowercase();
    if !is_uuid(&id) {
        return Err(Failure::refused(format!(
            "{id:?} is not a display id (a UUID, see `nurse-call-admin displays list`)"
        )));
    }
    store
        .displays()
        .await?
        .into_iter()
        .find(|display| display.id == id)
        .ok_or_else(|| unknown(&id))
}
