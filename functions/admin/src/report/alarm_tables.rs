//! The HTML report's alarm part (DECISIONS §14): per call type and per
//! section, how fast somebody accepted, arrived and the call ended, how
//! often it had to reach more people, how often nobody could be reached.

use maud::{Markup, html};

use nurse_call_core::report::{AlarmGroup, AlarmReport, AlarmStats, PersonReceipts, alarms::Times};

use super::duration::minutes;

pub(super) fn section(alarms: &AlarmReport) -> Markup {
    html! {
        section.keep {
            h2 { "Alarmierung des Personals" }
            @if alarms.total.alarmed == 0 {
                p.empty { "Keine alarmierten Rufe im Zeitraum." }
            } @else {
                p {
                    (alarms.total.alarmed) " von " (alarms.total.calls) " Rufen alarmierten Personal; "
                    (accepted(&alarms.total)) ". Kein Personal erreichbar: "
                    strong { (calls(alarms.total.unattended)) } "."
                }
                (table("Rufart", &alarms.by_call_type))
                (table("Bereich", &alarms.by_section))
                p.note {
                    "Zeiten ab Beginn des Rufs als Median · p90 · Maximum (m:ss, ab einer Stunde h:mm:ss), "
                    "in Klammern die Zahl der Rufe mit dieser Zeit. Eskalationen: Stufe → Rufe, die sie erreichten. "
                    "Bis Empfang: bis das erste Telefon (oder die Seite, das Handgerät) den Alarm bestätigte; "
                    "nie empfangen: alarmierte Personen, deren Alarm nie bestätigt wurde."
                }
                (people(&alarms.by_person))
            }
        }
    }
}

fn calls(count: usize) -> String {
    if count == 1 {
        "1 Ruf".to_string()
    } else {
        format!("{count} Rufe")
    }
}

fn accepted(total: &AlarmStats) -> String {
    match total.to_accept.median_seconds {
        Some(median) => format!(
            "{} angenommen (\u{201e}Ich komme\u{201c}), im Median nach {}",
            total.to_accept.count,
            minutes(median)
        ),
        None => "keiner angenommen".to_string(),
    }
}

fn table(first_column: &str, groups: &[AlarmGroup]) -> Markup {
    html! {
        table {
            thead { tr {
                th { (first_column) } th.number { "Rufe" } th.number { "alarmiert" }
                th.number { "bis Annahme" } th.number { "bis Anwesenheit" } th.number { "bis Ende" }
                th.number { "Eskalationen" } th.number { "Kein Personal" }
                th.number { "bis Empfang" } th.number { "nie empfangen" }
            } }
            tbody {
                @for group in groups {
                    @let stats = &group.stats;
                    tr {
                        td { (group.name.as_deref().unwrap_or("ohne Bereich")) }
                        td.number { (stats.calls) }
                        td.number { (stats.alarmed) }
                        td.number { (times(&stats.to_accept)) }
                        td.number { (times(&stats.to_presence)) }
                        td.number { (times(&stats.to_close)) }
                        td.number { (escalations(stats)) }
                        td.number { (stats.unattended) }
                        td.number { (times(&stats.to_first_receipt)) }
                        td.number { (stats.never_received) }
                    }
                }
            }
        }
    }
}

/// Per person, the share of alerts their phone confirmed in time
/// (DECISIONS §18): a low one is a phone to look at.
fn people(people: &[PersonReceipts]) -> Markup {
    html! {
        @if !people.is_empty() {
            h3 { "Empfang je Person" }
            table {
                thead { tr {
                    th { "Person" } th.number { "alarmiert" } th.number { "rechtzeitig empfangen" }
                    th.number { "Anteil" }
                } }
                tbody {
                    @for person in people {
                        tr {
                            td { (person.name) }
                            td.number { (person.alerted) }
                            td.number { (person.received_in_time) }
                            td.number { (person.share_percent) " %" }
                        }
                    }
                }
            }
            p.note {
                "Rechtzeitig: innerhalb von RECEIPT_SECONDS nach dem ersten Alarm der Person bestätigt. "
                "Ein niedriger Anteil heißt meist: Benachrichtigungen aus, Akku-Optimierung an, "
                "auf dem iPhone die Seite nicht vom Home-Bildschirm geöffnet."
            }
        }
    }
}

/// `median · p90 · max (n)` in `m:ss`, or a dash when no call has that time.
pub(super) fn times(times: &Times) -> String {
    match (times.median_seconds, times.p90_seconds, times.max_seconds) {
        (Some(median), Some(p90), Some(max)) => format!(
            "{} · {} · {} ({})",
            clock(median),
            clock(p90),
            clock(max),
            times.count
        ),
        _ => "–".to_string(),
    }
}

/// `m:ss` below an hour, `h:mm:ss` from an hour on: the table's columns
/// say what they are, so the unit of [`minutes`] would only widen them.
fn clock(seconds: i64) -> String {
    if seconds < 3600 {
        format!("{}:{:02}", seconds / 60, seconds % 60)
    } else {
        format!(
            "{}:{:02}:{:02}",
            seconds / 3600,
            seconds % 3600 / 60,
            seconds % 60
        )
    }
}

fn escalations(stats: &AlarmStats) -> String {
    if stats.escalations.is_empty() {
        return "–".to_string();
    }
    stats
        .escalations
        .iter()
        .map(|e| format!("{} → {}", e.level, e.calls))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_median_p90_max_and_count() {
        let shown = times(&Times {
            count: 4,
            median_seconds: Some(90),
            p90_seconds: Some(240),
            max_seconds: Some(240),
        });
        assert_eq!(shown, "1:30 · 4:00 · 4:00 (4)");
        assert_eq!(times(&Times::default()), "–");
        assert_eq!(clock(3725), "1:02:05");
        assert_eq!(calls(1), "1 Ruf");
    }
}
