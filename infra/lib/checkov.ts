/**
 * The checkov findings (scripts/test) that do not apply, with their reason,
 * and how a construct suppresses one. Any other finding fails the test
 * command; infra/test/data-protection.test.ts asserts the exact list.
 */
import { CfnResource } from 'aws-cdk-lib';
import { IConstruct } from 'constructs';

export const CHECKOV = {
  noVpc: {
    id: 'CKV_AWS_117',
    comment: 'No VPC: the function reaches only AWS endpoints (DynamoDB, SQS; the WebSocket management API) over public HTTPS; a VPC would add NAT or endpoint cost and cold-start time, and protect nothing',
  },
  noDlq: {
    id: 'CKV_AWS_116',
    comment: 'Invoked synchronously by API Gateway: a failure is answered to the client, which retries; no asynchronous event is left to keep',
  },
  streamDlq: {
    id: 'CKV_AWS_116',
    comment: 'Invoked by the stream event source mapping, whose on-failure destination (an SQS queue, alarmed) keeps failed batches; a function DLQ serves asynchronous invocations only',
  },
  deliverNoVpc: {
    id: 'CKV_AWS_117',
    comment: "No VPC: the function calls DynamoDB and the browsers' push services on the internet over HTTPS; a VPC would need a NAT gateway (cost, cold starts) and protect nothing",
  },
  alarmDlq: {
    id: 'CKV_AWS_116',
    comment: "Invoked by event source mappings only: the stream's keeps failed batches in an SQS queue, the timer queue's redrive policy failed timers in a dead-letter queue, both alarmed",
  },
  deliverDlq: {
    id: 'CKV_AWS_116',
    comment: "Invoked by the delivery queue's event source mapping only: the queue's redrive policy moves a job that failed 3 times to a dead-letter queue, alarmed",
  },
  plainEnvironment: {
    id: 'CKV_AWS_173',
    comment: 'The environment holds no secret (mode, time zone, table names, retention, URLs, the VAPID contact, the KMS key ARN); Lambda encrypts it at rest with its AWS-managed key',
  },
  noCapInProduction: {
    id: 'CKV_AWS_115',
    comment: "Production: a cap would refuse real nurse calls or displays; the API stages' throttling bounds the load and the throttles alarm watches",
  },
  streamCapInProduction: {
    id: 'CKV_AWS_115',
    comment: 'Production: the stream bounds it (one batch per shard at a time, parallelization factor 1); a cap would delay displays; the throttles alarm watches',
  },
  alarmCapInProduction: {
    id: 'CKV_AWS_115',
    comment: 'Production: a cap would hold back due timers, so alarms would escalate late; the stream and the timers due bound it; the throttles alarm watches',
  },
  deliverCapInProduction: {
    id: 'CKV_AWS_115',
    comment: "Production: a cap would hold back alerts to the staff's phones; the delivery queue's batches bound it; the throttles and queue age alarms watch",
  },
  forwardNoVpc: {
    id: 'CKV_AWS_117',
    comment: "No VPC: the function calls DynamoDB and the alarm servers' webhook endpoints on the internet over HTTPS; a VPC would need a NAT gateway (cost, cold starts) and protect nothing",
  },
  forwardDlq: {
    id: 'CKV_AWS_116',
    comment: "Invoked by the webhook queue's event source mapping only: the queue's redrive policy moves a wake-up whose invocation failed 3 times to a dead-letter queue, alarmed",
  },
  forwardCapInProduction: {
    id: 'CKV_AWS_115',
    comment: "Production: the webhook queue's one message group lets one invocation run at a time; a reserved cap would take the account's concurrency for nothing; the throttles alarm watches",
  },
  seedingDlq: {
    id: 'CKV_AWS_116',
    comment: 'The seeding provider is invoked by CloudFormation at stack creation; a failure fails the deploy, nothing to keep',
  },
  seedingConcurrency: {
    id: 'CKV_AWS_115',
    comment: 'The seeding provider runs once, at stack creation (ten conditional puts); nothing to cap',
  },
  sandboxTableKey: {
    id: 'CKV_AWS_119',
    comment: 'Sandbox: throwaway test data expiring after 30 days; encrypted at rest with the AWS-owned key, no customer key to pay for',
  },
  sandboxRecovery: {
    id: 'CKV_AWS_28',
    comment: 'Sandbox: throwaway test data, deleted with the stack; nothing to recover',
  },
  connectionsRecovery: {
    id: 'CKV_AWS_28',
    comment: 'Open WebSocket connections only, each gone within 2 h 10 min (TTL) and made again on reconnect; nothing to recover',
  },
  sandboxLogKey: {
    id: 'CKV_AWS_158',
    comment: 'Sandbox: logs of test traffic, encrypted at rest by CloudWatch Logs; no customer key (cost)',
  },
  sandboxTopicKey: {
    id: 'CKV_AWS_26',
    comment: "Sandbox: alarm mails carry no care data; CloudWatch cannot publish to SNS's AWS-managed key, and the sandbox has no customer key",
  },
  sandboxQueueKey: {
    id: 'CKV_AWS_27',
    comment: 'Sandbox: encrypted at rest with SQS-managed keys (SSE-SQS); it holds failed batch metadata of test data, no customer key to pay for',
  },
  sandboxTimerQueueKey: {
    id: 'CKV_AWS_27',
    comment: 'Sandbox: encrypted at rest with SQS-managed keys (SSE-SQS); it holds alarm timers (scope, call id, due time) of test data, no customer key to pay for',
  },
  sandboxDeliveryQueueKey: {
    id: 'CKV_AWS_27',
    comment: 'Sandbox: encrypted at rest with SQS-managed keys (SSE-SQS); it holds push jobs (kept 1 hour) of test data, no customer key to pay for',
  },
  sandboxWebhookQueueKey: {
    id: 'CKV_AWS_27',
    comment: 'Sandbox: encrypted at rest with SQS-managed keys (SSE-SQS); it holds webhook wake-ups, which carry no data at all, no customer key to pay for',
  },
} as const;

export type CheckovSkip = (typeof CHECKOV)[keyof typeof CHECKOV];

/** Suppresses checkov findings on a construct's CloudFormation resource (metadata `checkov.skip`). */
export function skipCheckov(construct: IConstruct, ...skips: CheckovSkip[]): void {
  const resource = (construct.node.defaultChild ?? construct) as CfnResource;
  const existing: CheckovSkip[] = resource.getMetadata('checkov')?.skip ?? [];
  resource.addMetadata('checkov', { skip: [...existing, ...skips] });
}
