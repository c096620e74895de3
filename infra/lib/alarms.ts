/**
 * Alarms: the API's 5xx share, throttles and errors of each function (an
 * error is a crash or a timeout: the handlers always answer), hand-edited
 * items the functions do not use as stored (DECISIONS §7), the
 * broadcast's failure queue and iterator age (made by infra/lib/live.ts),
 * the alarm timers' queues (made by infra/lib/alarm-timers.ts), the
 * delivery queues (made by infra/lib/deliveries.ts), the webhook
 * queue's dead letters, its events not delivered and the wake-up
 * schedule's failed invocations (made by infra/lib/webhooks.ts).
 * With an alarm address, each one mails it through an SNS topic.
 */
import { Duration, Stack } from 'aws-cdk-lib';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';

import { CHECKOV, skipCheckov } from './checkov';
import { FunctionName, functionsOf, pascal } from './functions';
import { AT_LEAST_ONCE, logLinesAlarm } from './metric-alarms';
import type { ServiceMode } from './nurse-call-stack';

export interface AlarmsProps {
  /** The installation's name: alarm names are `nurse-call-<installation>-…`. */
  readonly installation: string;
  readonly mode: ServiceMode;
  /** The installation's key (production): the topic is encrypted with it. */
  readonly key?: kms.IKey;
  /** Where alarms are mailed (an SNS topic is created); none when unset. */
  readonly alarmEmail?: string;
  /** Share of API requests answered 5xx (percent, per 5 minutes) that raises the alarm. @default 5 */
  readonly api5xxRatePercent?: number;
  readonly api: apigwv2.HttpApi;
  /** The functions of {@link functionsOf}: each one's throttles and errors. */
  readonly functions: Record<FunctionName, lambda.Function>;
  /** Alarms made elsewhere that mail the same topic (the live delivery's, the alarm timers', the deliveries', the webhooks', the wake-up schedule's). */
  readonly alarms: cloudwatch.Alarm[];
}

export function createAlarms(stack: Stack, props: AlarmsProps): void {
  const { installation, mode, key, api, functions: fns } = props;
  // In production the topic is encrypted with the installation's key, which
  // CloudWatch may use to publish this stack's alarms.
  const topic = props.alarmEmail
    ? new sns.Topic(stack, 'AlarmTopic', { displayName: `nurse-call ${installation} alarms`, masterKey: key })
    : undefined;
  if (topic && props.alarmEmail) {
    topic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
    if (key) {
      key.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: 'AlarmsOfThisStackPublish',
          principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
          actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
          resources: ['*'],
          conditions: {
            StringEquals: { 'aws:SourceAccount': stack.account },
            ArnLike: { 'aws:SourceArn': `arn:${stack.partition}:cloudwatch:${stack.region}:${stack.account}:alarm:nurse-call-${installation}-*` },
          },
        }),
      );
    } else {
      skipCheckov(topic, CHECKOV.sandboxTopicKey);
    }
  }
  const alarms: cloudwatch.Alarm[] = [...props.alarms];
  const period = Duration.minutes(5);
  const rate = new cloudwatch.MathExpression({
    label: 'API 5xx rate (%)',
    expression: 'IF(requests > 0, 100 * errors / requests, 0)',
    usingMetrics: {
      errors: api.metricServerError({ period, statistic: 'Sum' }),
      requests: api.metricCount({ period, statistic: 'Sum' }),
    },
    period,
  });
  alarms.push(
    rate.createAlarm(stack, 'Api5xxRateAlarm', {
      alarmName: `nurse-call-${installation}-api-5xx-rate`,
      alarmDescription: `More than ${props.api5xxRatePercent ?? 5}% of the API's requests answered 5xx (503: DynamoDB failing or throttled after retries)`,
      threshold: props.api5xxRatePercent ?? 5,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    }),
  );
  for (const name of functionsOf(mode)) {
    const fn = fns[name];
    alarms.push(
      fn.metricThrottles({ period, statistic: 'Sum' }).createAlarm(stack, `${pascal(name)}ThrottlesAlarm`, {
        alarmName: `nurse-call-${installation}-${name}-throttles`,
        alarmDescription: `The ${name} function was throttled (account or reserved concurrency exhausted)`,
        ...AT_LEAST_ONCE,
      }),
      fn.metricErrors({ period, statistic: 'Sum' }).createAlarm(stack, `${pascal(name)}ErrorsAlarm`, {
        alarmName: `nurse-call-${installation}-${name}-errors`,
        alarmDescription: `The ${name} function failed (crash, timeout or failed cold start)`,
        ...AT_LEAST_ONCE,
      }),
    );
  }
  alarms.push(handEditAlarm(stack, installation, functionsOf(mode).map((name) => fns[name])));
  if (topic) {
    for (const alarm of alarms) {
      alarm.addAlarmAction(new cloudwatchActions.SnsAction(topic));
    }
  }
}

/**
 * The error lines of functions/core (its JSON logs, `message` a field of
 * each line) that say a hand-edited item is not used as stored: a call type's
 * field fell back to its fail-safe value (store/fallbacks.rs, once per cache
 * refresh and function instance), or a malformed consumer or display was
 * refused (store/mod.rs, once per refused request).
 */
export const HAND_EDIT_MESSAGES = ['call type field fell back', 'malformed credential refused'] as const;

/** The metric the hand-edit lines of every function's log group count into. */
export const HAND_EDIT_METRIC = 'HandEditedItemsNotUsedAsStored';

/**
 * A metric filter on each function's log group (every function reads call
 * types or credentials) counting {@link HAND_EDIT_MESSAGES}, and the alarm
 * on their sum: one such line within five minutes.
 */
function handEditAlarm(stack: Stack, installation: string, functions: lambda.Function[]): cloudwatch.Alarm {
  return logLinesAlarm(stack, {
    installation,
    filters: functions.map((fn) => ({ id: `${fn.node.id}HandEdits`, logGroup: fn.logGroup })),
    messages: HAND_EDIT_MESSAGES,
    metricName: HAND_EDIT_METRIC,
    alarmId: 'HandEditsAlarm',
    alarmName: `nurse-call-${installation}-hand-edits`,
    alarmDescription:
      'A hand-edited item is not used as stored: a call type field fell back to its fail-safe value ' +
      '(nurse-call-admin call-types check lists them), or a malformed consumer or display was refused ' +
      "(the function's log names it: 'malformed credential refused')",
  });
}
