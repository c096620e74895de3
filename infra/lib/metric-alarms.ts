/**
 * The shapes of alarm the stack repeats: "at least once within five
 * minutes" (a throttle, an error, a message in a dead-letter queue), and
 * the count of given error lines in functions' logs (a metric filter on
 * each log group, one alarm on their sum). The queues' alarms are
 * infra/lib/queues.ts's; what each alarm means is said where it is made.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

/** The period of the stack's alarms (the API's 5xx share aside). */
export const ALARM_PERIOD = Duration.minutes(5);

/** Fires on one occurrence within a period; no data (nothing happened) is fine. */
export const AT_LEAST_ONCE = {
  threshold: 1,
  comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
  evaluationPeriods: 1,
  treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
} as const;

export interface LogLinesAlarmProps {
  /** The installation's name: the metric's namespace `NurseCall/<installation>`. */
  readonly installation: string;
  /** The log groups whose lines count, each with its metric filter's construct id. */
  readonly filters: readonly { readonly id: string; readonly logGroup: logs.ILogGroup }[];
  /** The lines' `message` fields (JSON logs), matched whole. */
  readonly messages: readonly string[];
  /** The metric the lines count into (1 a line). */
  readonly metricName: string;
  /** The alarm's construct id. */
  readonly alarmId: string;
  /** `nurse-call-<installation>-…`. */
  readonly alarmName: string;
  /** What a line means and where to look (CloudWatch takes at most 1024 characters). */
  readonly alarmDescription: string;
}

/**
 * A metric filter on each log group counting the lines whose `message` is
 * one of `messages`, and an alarm on their sum: one such line within five
 * minutes.
 */
export function logLinesAlarm(scope: Construct, props: LogLinesAlarmProps): cloudwatch.Alarm {
  const namespace = `NurseCall/${props.installation}`;
  const filterPattern = logs.FilterPattern.any(
    ...props.messages.map((message) => logs.FilterPattern.stringValue('$.message', '=', message)),
  );
  for (const { id, logGroup } of props.filters) {
    new logs.MetricFilter(scope, id, {
      logGroup,
      filterPattern,
      metricNamespace: namespace,
      metricName: props.metricName,
      metricValue: '1',
    });
  }
  const metric = new cloudwatch.Metric({ namespace, metricName: props.metricName, statistic: 'Sum', period: ALARM_PERIOD });
  return metric.createAlarm(scope, props.alarmId, {
    alarmName: props.alarmName,
    alarmDescription: props.alarmDescription,
    ...AT_LEAST_ONCE,
  });
}
