//! Who may answer (DECISIONS §20): a person alerted for the call, or on
//! duty for its section; anyone else's response is refused and changes
//! nothing.

use super::tests::{World, at, duty, person};
use super::*;

#[test]
fn a_person_neither_alerted_nor_on_duty_for_the_section_is_refused() {
    let w = World::new();
    let alerting = w.step(&Alarm::pending(at(0)), at(0)).alarm;
    // Ben is on duty for section 2, Chef off duty: neither was alerted.
    for who in ["ben", "chef"] {
        for response in [Response::Accepted, Response::Declined, Response::Read] {
            assert_eq!(
                w.respond(&alerting, who, response, at(5)),
                Err(Refusal::NotResponsible),
                "{who} {response:?}"
            );
        }
    }
    // Anna, alerted, may.
    let accepted = w
        .respond(&alerting, "anna", Response::Accepted, at(5))
        .unwrap();
    assert_eq!(accepted.alarm.status, AlarmStatus::Accepted);
    // Still refused once the call is accepted (no 409 telling them who).
    assert_eq!(
        w.respond(&accepted.alarm, "ben", Response::Read, at(6)),
        Err(Refusal::NotResponsible)
    );
}

#[test]
fn a_person_on_duty_for_the_section_may_answer_before_any_alert_reached_them() {
    let mut w = World::new();
    w.staff.push(person("dora", &[]));
    let alerting = w.step(&Alarm::pending(at(0)), at(0)).alarm;
    // Dora signs on for section 1 after the alert went out: her duty as
    // the caller read it lets her accept.
    let doras = duty("dora", &["1"]);
    let dora = w.staff.iter().find(|s| s.id == "dora").unwrap().clone();
    let situation = w.situation(at(5));
    assert_eq!(
        respond(&alerting, &situation, &dora, None, Response::Accepted),
        Err(Refusal::NotResponsible),
        "no duty known: refused"
    );
    let accepted = respond(
        &alerting,
        &situation,
        &dora,
        Some(&doras),
        Response::Accepted,
    )
    .unwrap();
    assert_eq!(accepted.alarm.accepted.as_ref().unwrap().staff.id, "dora");
    // A duty for the whole house covers it; one for another section does not.
    let house = duty("dora", &[]);
    assert!(respond(&alerting, &situation, &dora, Some(&house), Response::Read).is_ok());
    let elsewhere = duty("dora", &["2"]);
    assert_eq!(
        respond(
            &alerting,
            &situation,
            &dora,
            Some(&elsewhere),
            Response::Read
        ),
        Err(Refusal::NotResponsible)
    );
    // Someone else's duty is not hers.
    let annas = duty("anna", &["1"]);
    assert_eq!(
        respond(&alerting, &situation, &dora, Some(&annas), Response::Read),
        Err(Refusal::NotResponsible)
    );
}
