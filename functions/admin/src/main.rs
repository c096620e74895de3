//! `nurse-call-admin`: the admin command of the nurse-call service
//! (DECISIONS §8a). It issues, rotates and revokes consumers, displays and
//! staff, registers elements, checks their supervision, edits call types and
//! their escalation, writes the quality report and shows a call's alarm
//! audit, on the embedded store's file (also while the local server runs) or
//! on DynamoDB.
//!
//! One module per command group: [`consumers`], [`displays`], [`staff`],
//! [`elements`], [`call_types`], [`report`], [`audit`].
//! [`store`] picks and opens the store, [`output`] prints tables or JSON,
//! [`failure`] maps errors to exit statuses.

mod audit;
mod call_types;
mod consumers;
mod displays;
mod elements;
mod failure;
mod output;
mod report;
mod staff;
mod store;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use failure::Failure;
use output::Output;

const AFTER_HELP: &str = "\
Examples:
  nurse-call-admin consumers create --name \"Zentrale Station 1\"
  nurse-call-admin displays create --name \"Flur Station 2\" --section S2
  nurse-call-admin staff create --name \"Anna K.\" --group Leitung
  nurse-call-admin call-types set Notruf --escalation '[{\"after\":0,\"to\":\"section\"},{\"after\":60,\"to\":\"house\"}]'
  nurse-call-admin elements import elements.csv
  nurse-call-admin call-types set Notruf --internal-name NR
  nurse-call-admin elements health
  nurse-call-admin report --from 2026-11-01 --to 2026-11-30 --format html --out report.html
  nurse-call-admin --dynamodb-endpoint http://127.0.0.1:5000 consumers list --json

Exit status: 0 done; 1 refused (unknown id, invalid input; nothing written);
2 wrong usage; 3 the store failed or cannot be reached.";

/// Administers a nurse-call installation: consumers, displays, staff, elements, call types, reports.
///
/// Works on the embedded store's file (--data-dir, also while the local
/// server runs) or on DynamoDB (--dynamodb-endpoint, or --dynamodb for AWS).
/// Prints tables for people, or JSON with --json.
#[derive(Debug, Parser)]
#[command(name = "nurse-call-admin", version, after_help = AFTER_HELP)]
struct Cli {
    #[command(flatten)]
    store: store::StoreArgs,

    /// Print the result as JSON (for scripts) instead of a table.
    #[arg(long, global = true, display_order = 900)]
    json: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Issue, list, rotate the secret of, and revoke consumers (central systems, gateways).
    #[command(subcommand)]
    Consumers(consumers::Command),
    /// Register, list, rotate the token of, and revoke displays (readers of open calls).
    #[command(subcommand)]
    Displays(displays::Command),
    /// Register, list, rotate the token of, revoke and erase staff (the people alarms reach).
    #[command(subcommand)]
    Staff(staff::Command),
    /// Register, import, list, remove and erase the installation's elements.
    #[command(subcommand)]
    Elements(elements::Command),
    /// List, show, edit (escalation included), seed and check the call types.
    #[command(subcommand)]
    CallTypes(call_types::Command),
    /// The quality report and audit export of local days: response times per
    /// call type and section, calls by hour, the slowest calls, the alarms'
    /// times to accept, to presence and to close, escalations, unattended calls.
    Report(report::Command),
    /// The alarm audit of one call: every alert, escalation, response and stop.
    Audit(audit::Command),
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("error: {}", failure.message());
            failure.exit_code()
        }
    }
}

async fn run(cli: Cli) -> Result<(), Failure> {
    let out = Output::new(cli.json);
    let connection = cli.store.connect().await?;
    let store = connection.store.as_ref();
    let outcome = match cli.command {
        Command::Consumers(command) => consumers::run(command, store, out).await,
        Command::Displays(command) => displays::run(command, store, out).await,
        Command::Staff(command) => staff::run(command, store, out).await,
        Command::Elements(command) => elements::run(command, store, out).await,
        Command::CallTypes(command) => call_types::run(command, store, out).await,
        Command::Report(command) => report::run(command, store, out).await,
        Command::Audit(command) => audit::run(command, store, out).await,
    };
    outcome.map_err(|failure| failure.in_store(&connection.description))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
