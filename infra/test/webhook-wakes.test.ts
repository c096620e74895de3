/**
 * The EventBridge schedule that wakes the forward function every minute
 * (infra/lib/webhooks.ts, `wakeEveryMinute`): without it the webhook
 * dispatcher's rounds, which sweep the elements for `element.attention`,
 * would not run in a quiet house. Its rule (every minute, enabled, on the
 * default event bus, its name within EventBridge's 64 characters), its one
 * target (the alarm function's timer queue, a standard queue, never the
 * FIFO webhook queue; the wake-up as the Rust side writes it; few retries,
 * a short age), the timer queue's policy (EventBridge may send for this
 * rule only), in production the key's policy (EventBridge may use the key
 * for this rule and the timer queue's encryption context only; with the
 * key's other statements: data-protection.test.ts), and the alarm on the
 * rule's failed invocations (a wake-up refused is dropped silently else).
 * And the Rust side: the alarm function takes the message from the timer
 * queue as a wake-up and passes it on to the webhook queue, and each round
 * of the forward function sweeps when due. Offline, on the synthesized
 * templates of both modes.
 */
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import * as sqs from 'aws-cdk-lib/aws-sqs';

import { timerQueueName } from '../lib/alarm-timers';
import {
  ATTENTION_WAKE_EVERY,
  ATTENTION_WAKE_MAX_AGE,
  ATTENTION_WAKE_RETRIES,
  WAKE_FAILED_ALARM,
  MINUTE_WAKE,
  WEBHOOK_WAKE,
  wakeRuleName,
} from '../lib/webhooks';
import {
  Json,
  MODES,
  alarmNamed,
  functionId,
  only,
  queueArnOf,
  queueId,
  queueReaders,
  resourcesOf,
  rustSource,
  rustMinuteWake,
  rustWebhookWake,
  synth,
  synthStack,
  text,
  topicTemplates,
  wakeRuleId,
  wakeSendStatement,
} from './helpers';

const templates = topicTemplates();

for (const mode of MODES) {
  const template = templates[mode];
  const production = mode === 'production';
  const queue = (suffix: string) => resourcesOf(template, 'AWS::SQS::Queue')[queueId(template, suffix)];

  describe(`${mode}: the EventBridge schedule that wakes the forward function every minute, through the timer queue (element.attention in a quiet house)`, () => {
    const rule = () => resourcesOf(template, 'AWS::Events::Rule')[wakeRuleId(template)].Properties;

    it('one rule, on the default event bus: every minute, enabled, named nurse-call-<installation>-webhook-wake, no event pattern, no role', () => {
      const props = rule();
      assert.deepEqual(Object.keys(props).sort(), ['Description', 'Name', 'ScheduleExpression', 'State', 'Targets']);
      assert.equal(props.ScheduleExpression, 'rate(1 minute)');
      assert.equal(ATTENTION_WAKE_EVERY.toSeconds(), 60);
      assert.equal(props.State, 'ENABLED');
      assert.equal(props.Name, `nurse-call-test-${mode}-webhook-wake`);
      assert.equal(props.Name, wakeRuleName(`test-${mode}`));
      // No EventBusName: the default bus, whose rules' ARNs the key policy names (data-protection.test.ts).
      assert.equal(props.EventBusName, undefined);
      assert.match(props.Description, /every minute.*timer queue.*element\.attention/);
    });

    it('one target: the timer queue (standard: no message group, no deduplication id), the Rust side\'s MINUTE_WAKE as its input, 2 retries within 60 s; not the webhook queue', () => {
      const targets: Json[] = rule().Targets;
      assert.equal(targets.length, 1);
      const [target] = targets;
      assert.deepEqual(Object.keys(target).sort(), ['Arn', 'Id', 'Input', 'RetryPolicy']);
      assert.deepEqual(target.Arn, queueArnOf(template, 'alarm-timers'));
      // Not the webhook queue, nor any FIFO queue: SQS would refuse each
      // message without a deduplication id (neither content-based
      // deduplication nor SqsParameters here).
      assert.notDeepEqual(target.Arn, queueArnOf(template, 'webhooks.fifo'));
      assert.equal(queue('alarm-timers').Properties.FifoQueue, undefined);
      assert.equal(target.SqsParameters, undefined);
      // The exact text the alarm function passes on (functions/alarms-aws/src/queues.rs).
      assert.equal(target.Input, rustMinuteWake());
      assert.equal(target.Input, '{"minute":"wake"}');
      assert.deepEqual(JSON.parse(target.Input), MINUTE_WAKE);
      // A wake-up missed is harmless: the next minute's comes.
      assert.deepEqual(target.RetryPolicy, { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 60 });
      assert.equal(ATTENTION_WAKE_RETRIES, 2);
      assert.equal(ATTENTION_WAKE_MAX_AGE.toSeconds(), 60);
      assert.ok(ATTENTION_WAKE_MAX_AGE.toSeconds() <= ATTENTION_WAKE_EVERY.toSeconds(), 'a retried wake-up never outlives the next one');
      // The alarm function takes the timer queue: it passes the wake-up on to the webhook queue, which the forward function takes.
      assert.deepEqual(queueReaders(template, 'alarm-timers'), [functionId(template, 'alarm')]);
      assert.deepEqual(queueReaders(template, 'webhooks.fifo'), [functionId(template, 'forward')]);
    });

    it('EventBridge may send to the timer queue only, sqs:SendMessage only, for this rule only (aws:SourceArn); no other queue policy names it', () => {
      const naming: Json[] = [];
      for (const policy of Object.values(resourcesOf(template, 'AWS::SQS::QueuePolicy'))) {
        for (const statement of policy.Properties.PolicyDocument.Statement) {
          if (JSON.stringify(statement).includes('events.amazonaws.com')) {
            naming.push({ queues: policy.Properties.Queues, statement });
          }
        }
      }
      assert.deepEqual(naming, [{ queues: [{ Ref: queueId(template, 'alarm-timers') }], statement: wakeSendStatement(template) }]);
      assert.deepEqual(wakeSendStatement(template).Condition, {
        ArnEquals: { 'aws:SourceArn': { 'Fn::GetAtt': [wakeRuleId(template), 'Arn'] } },
      });
    });

    it(
      production
        ? "the key's policy lets EventBridge generate and check data keys for this rule only (aws:SourceArn) and for the timer queue only (its SQS encryption context aws:sqs:arn), both ARNs written from the names; no kms:ViaService"
        : 'no key: SQS-managed encryption asks EventBridge for no grant',
      () => {
        const keys = resourcesOf(template, 'AWS::KMS::Key');
        const naming: Json[] = Object.values(keys).flatMap((key) =>
          key.Properties.KeyPolicy.Statement.filter((s: Json) => JSON.stringify(s.Principal).includes('events.amazonaws.com')),
        );
        if (!production) {
          assert.deepEqual(naming, []);
          assert.deepEqual(keys, {});
          return;
        }
        assert.equal(naming.length, 1);
        const [statement] = naming;
        // Every condition value as text (Fn::Join joined, pseudo parameters as ${AWS::…}).
        const conditions = Object.fromEntries(
          Object.entries(statement.Condition as Record<string, Record<string, Json>>).map(([operator, keys]) => [
            operator,
            Object.fromEntries(Object.entries(keys).map(([name, value]) => [name, text(value)])),
          ]),
        );
        const installation = `test-${mode}`;
        assert.deepEqual(
          { ...statement, Action: [statement.Action].flat().sort(), Condition: conditions },
          {
            Sid: 'WebhookWakeScheduleSendsThroughSqs',
            Effect: 'Allow',
            Principal: { Service: 'events.amazonaws.com' },
            Action: ['kms:Decrypt', 'kms:GenerateDataKey'],
            Resource: '*',
            Condition: {
              ArnEquals: { 'aws:SourceArn': `arn:\${AWS::Partition}:events:\${AWS::Region}:\${AWS::AccountId}:rule/${wakeRuleName(installation)}` },
              StringEquals: {
                'kms:EncryptionContext:aws:sqs:arn': `arn:\${AWS::Partition}:sqs:\${AWS::Region}:\${AWS::AccountId}:${timerQueueName(installation)}`,
              },
            },
          },
        );
        // The names the ARNs are written from are the rule's and the timer queue's, the rule's target.
        assert.equal(rule().Name, wakeRuleName(installation));
        assert.equal(queue('alarm-timers').Properties.QueueName, timerQueueName(installation));
        assert.equal(queue('alarm-timers').Properties.QueueName, `nurse-call-test-${mode}-alarm-timers`);
        assert.deepEqual(rule().Targets[0].Arn, queueArnOf(template, 'alarm-timers'));
      },
    );

    it('a wake-up EventBridge could not deliver raises an alarm: the rule\'s FailedInvocations (AWS/Events, RuleName), Sum over 5 minutes ≥ 1, missing data not breaching, to the topic', () => {
      const alarm = alarmNamed(template, mode, 'webhook-wake-failed');
      assert.equal(WAKE_FAILED_ALARM, 'webhook-wake-failed');
      const [topicId] = only(resourcesOf(template, 'AWS::SNS::Topic'), 'topic');
      const { AlarmDescription: description, ...rest } = alarm;
      assert.deepEqual(rest, {
        AlarmName: `nurse-call-test-${mode}-webhook-wake-failed`,
        Namespace: 'AWS/Events',
        MetricName: 'FailedInvocations',
        Dimensions: [{ Name: 'RuleName', Value: { Ref: wakeRuleId(template) } }],
        Statistic: 'Sum',
        Period: 300,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        Threshold: 1,
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
        AlarmActions: [{ Ref: topicId }],
      });
      // What it means for nurses and technicians, and what to check.
      assert.match(description, /element\.attention \(battery low, unreachable, silent\) is not announced to the alarm servers/);
      assert.match(description, /calls and their events are unaffected/);
      assert.match(description, new RegExp(`the rule ${wakeRuleName(`test-${mode}`)}'s FailedInvocations`));
      assert.match(description, /the key policy \(WebhookWakeScheduleSendsThroughSqs, in production\)/);
      assert.match(description, /the timer queue's policy/);
      assert.ok(description.length <= 1024, 'CloudWatch takes at most 1024 characters');
    });
  });
}

describe('the wake-up schedule\'s rule', () => {
  it('its name fits EventBridge\'s 64 characters for the longest installation name (40 characters)', () => {
    const longest = `a${'-b'.repeat(19)}c`;
    assert.equal(longest.length, 40);
    assert.throws(() => synth('sandbox', { installation: `${longest}d` }), /installation/);
    const template = synth('sandbox', { installation: longest });
    const name = only(resourcesOf(template, 'AWS::Events::Rule'), 'EventBridge rule')[1].Properties.Name;
    assert.equal(name, wakeRuleName(longest));
    assert.ok(name.length <= 64, `${name}: ${name.length} characters`);
    assert.match(name, /^[.\-_A-Za-z0-9]+$/);
  });

  it('refuses a FIFO queue as its target (the webhook queue): the rule names no deduplication id', () => {
    const stack = synthStack('sandbox');
    assert.throws(() => stack.webhooks.wakeEveryMinute(stack.webhooks.queue), /standard queue/);
  });

  it('refuses a queue not named as the timer queue: the key policy writes the queue\'s ARN from that name', () => {
    for (const mode of MODES) {
      const stack = synthStack(mode);
      assert.throws(() => stack.webhooks.wakeEveryMinute(stack.deliveries.queue), /timer queue nurse-call-test-[a-z]+-alarm-timers/);
      const unnamed = new sqs.Queue(stack, 'Unnamed');
      assert.throws(() => stack.webhooks.wakeEveryMinute(unnamed), /timer queue/);
    }
  });
});

describe('the Rust side: the wake-up passed on, the sweep in every round', () => {
  it('the schedule\'s message is MINUTE_WAKE of functions/alarms-aws/src/queues.rs: the alarm function takes it from the timer queue, steps the overdue alarms (DECISIONS §19) and passes a webhook wake-up (WEBHOOK_WAKE, also what the forward function\'s retries send) on to the webhook queue, deduplicated by the timer message\'s id', () => {
    assert.equal(rustMinuteWake(), JSON.stringify(MINUTE_WAKE));
    assert.equal(rustWebhookWake(), JSON.stringify(WEBHOOK_WAKE));
    const queues = rustSource('alarms-aws/src/queues.rs');
    assert.match(queues, /pub fn is_webhook_wake\(body: &str\) -> bool/);
    assert.match(queues, /pub fn is_minute_wake\(body: &str\) -> bool/);
    const handler = rustSource('alarms-aws/src/handler.rs');
    assert.match(
      handler,
      /let id = message\.message_id\.clone\(\)\.unwrap_or_default\(\);\s*if message\.body\.as_deref\(\)\.is_some_and\(is_minute_wake\) \{\s*return \(id\.clone\(\), self\.take_minute_wake\(&id, now\)\.await\);\s*\}\s*if message\.body\.as_deref\(\)\.is_some_and\(is_webhook_wake\) \{[^}]*self\.webhooks\.send_webhook_wake\(&id\)\.await/,
    );
    assert.match(
      rustSource('alarms-aws/src/minute.rs'),
      /async fn take_minute_wake[\s\S]*run_overdue_alarms\(now, OVERDUE_PER_WAKE\)[\s\S]*self\.sweep_links\(id, now\)[\s\S]*self\.webhooks\.send_webhook_wake\(id\)\.await/,
    );
  });

  it('each round of the forward function sweeps for element.attention when due, at most every ATTENTION_EVERY (10 s): the schedule\'s minute is no more often', () => {
    const every = /pub(?:\(crate\))? const ATTENTION_EVERY: chrono::Duration = chrono::Duration::seconds\((\d+)\);/.exec(
      rustSource('core/src/app/webhooks/attention.rs'),
    );
    assert.ok(every, 'ATTENTION_EVERY of functions/core/src/app/webhooks/attention.rs');
    assert.equal(Number(every[1]), 10);
    assert.ok(ATTENTION_WAKE_EVERY.toSeconds() >= Number(every[1]));
    const webhooks = rustSource('core/src/app/webhooks.rs');
    const round = webhooks.slice(webhooks.indexOf('pub async fn round(')).split(/\n    (?:pub )?(?:async )?fn |\n    \/\/\/ /)[0];
    assert.match(round, /self\.sweep_attention_when_due\(&endpoints, now\)\.await/);
    assert.match(rustSource('forward/src/webhook_rounds.rs'), /self\.dispatcher\.round\(Utc::now\(\)\)\.await/);
  });
});
