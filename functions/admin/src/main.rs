//! `nurse-call-admin`: the admin command of the nurse-call service
//! (DECISIONS §8a). It issues, rotates and revokes consumers, displays and
//! staff, registers elements, checks their supervision, edits call types and
//! their escalation, writes the quality report and shows a call's alarm
//! audit, on the embedded store's file (also while the local server runs) or
//! on DynamoDB.
//!
//! One module per command group: [`consumers`], [`displays`], [`staff`],
//! [`elements`], [`call_types`], [`report`], [`audit`].
//! [`store`] picks and opens the store (`init` creates the embedded one;
//! nothing else creates a store), [`output`] prints tables or JSON in the
//! installation's zone, [`failure`] maps errors to exit statuses.

mod audit;
mod call_types;
mod consumers;
mod displays;
mod elements;
mod failure;
mod output;
mod private_network;
mod report;
mod staff;
mod store;
mod webhook_secrets;
mod webhooks;

use std::process::ExitCode;

use chrono_tz::Tz;
use clap::{CommandFactory, Parser, Subcommand};

use nurse_call_core::{Settings, parse_time_zone};

use failure::Failure;
use output::Output;

const AFTER_HELP: &str = "\
Examples:
  nurse-call-admin init
  nurse-call-admin consumers create --name \"Zentrale Station 1\"
  nurse-call-admin displays create --name \"Flur Station 2\" --section S2
  nurse-call-admin staff create --name \"Anna K.\" --group Leitung
  nurse-call-admin webhooks create --url https://alarmserver.example/hook --event call.alert
  nurse-call-admin call-types set Notruf --escalation '[{\"after\":0,\"to\":\"section\"},{\"after\":60,\"to\":\"house\"}]'
  nurse-call-admin elements import elements.csv
  nurse-call-admin call-types set Notruf --internal-name NR
  nurse-call-admin elements health
  nurse-call-admin report --from 2026-11-01 --to 2026-11-30 --format html --out report.html
  nurse-call-admin --dynamodb-endpoint http://127.0.0.1:5000 consumers list --json
  nurse-call-admin --dynamodb --secrets-key alias/nurse-call-home1 webhooks create --url https://alarmserver.example/hook

Exit status: 0 done (also when a reader such as `head` closed the output early);
1 refused (unknown id, invalid input; nothing written); 2 wrong usage; 3 the store
failed or cannot be reached; 4 no store where the options point (nothing created:
check --data-dir or the table names, or run `init`).";

/// Administers a nurse-call installation: consumers, displays, staff, elements, call types, reports.
///
/// Works on the embedded store's file (--data-dir, also while the local
/// server runs) or on DynamoDB (--dynamodb-endpoint, or --dynamodb for AWS);
/// only `init` creates a store. Prints tables for people, or JSON with
/// --json; times in the installation's zone (--time-zone).
#[derive(Debug, Parser)]
#[command(name = "nurse-call-admin", version, after_help = AFTER_HELP)]
struct Cli {
    #[command(flatten)]
    store: store::StoreArgs,

    /// Print the result as JSON (for scripts) instead of a table.
    #[arg(long, global = true, display_order = 900)]
    json: bool,

    /// IANA time zone of the installation: printed times are local to it,
    /// and so are the report's days and hours.
    #[arg(long, global = true, env = "SERVICE_TIME_ZONE", display_order = 901,
          default_value = Settings::DEFAULT_TIME_ZONE, value_parser = parse_time_zone)]
    time_zone: Tz,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create the embedded store (its folder and file, with the default call
    /// types); nothing changes if it exists. On DynamoDB: check that the
    /// stack's tables exist (the admin command creates none).
    Init,
    /// Issue, list, rotate the secret of, and revoke consumers (central systems, gateways).
    #[command(subcommand)]
    Consumers(consumers::Command),
    /// Register, list, rotate the token of, and revoke displays (readers of open calls).
    #[command(subcommand)]
    Displays(displays::Command),
    /// Register, list, rotate the token of, revoke and erase staff (the people alarms reach).
    #[command(subcommand)]
    Staff(staff::Command),
    /// Register, list, rotate the secret of, disable and delete webhook
    /// endpoints (alarm servers, DECT and pager gateways); the delivery log.
    #[command(subcommand)]
    Webhooks(webhooks::Command),
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
    let usage = match &cli.command {
        Command::Report(report) => report.check_format(cli.json),
        _ => Ok(()),
    }
    .and_then(|()| cli.store.check_secrets_key());
    if let Err(message) = usage {
        // Reported as clap reports usage errors: the usage line, exit 2.
        Cli::command()
            .error(clap::error::ErrorKind::ArgumentConflict, message)
            .exit();
    }
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            output::note(&format!("error: {}", failure.message()));
            failure.exit_code()
        }
    }
}

async fn run(cli: Cli) -> Result<(), Failure> {
    let out = Output::new(cli.json, cli.time_zone);
    if let Command::Init = cli.command {
        return init(&cli.store, out).await;
    }
    let connection = cli.store.connect().await?;
    let store = connection.store.as_ref();
    let outcome = match cli.command {
        Command::Init => unreachable!("handled above"),
        Command::Consumers(command) => consumers::run(command, store, out).await,
        Command::Displays(command) => displays::run(command, store, out).await,
        Command::Staff(command) => staff::run(command, store, out).await,
        Command::Webhooks(command) => {
            webhooks::run(command, store, cli.store.sealer().await.as_ref(), out).await
        }
        Command::Elements(command) => elements::run(command, store, out).await,
        Command::CallTypes(command) => call_types::run(command, store, out).await,
        Command::Report(command) => report::run(command, store, out).await,
        Command::Audit(command) => audit::run(command, store, out).await,
    };
    outcome.map_err(|failure| failure.in_store(&connection.description))
}

async fn init(store: &store::StoreArgs, out: Output) -> Result<(), Failure> {
    let initialised = store.init().await?;
    out.print(&initialised, |i| {
        if i.created {
            format!(
                "Created the store {} with the default call types.\n",
                i.store
            )
        } else {
            format!("The store {} exists already; nothing changed.\n", i.store)
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
