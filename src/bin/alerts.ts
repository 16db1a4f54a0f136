// `alerts test`: one notification sent now to the deployment's ALERT_WEBHOOK_URL, signed and
// written as the alerts worker writes every other (src/alerts), and what the destination answered.
import { sendTestAlert } from "../alerts/alerts.js";
import { describeAnswer } from "../alerts/alert-post.js";
import { loadConfig } from "../config/config.js";
import { type Answer, answer, type Command, CommandError, didYouMean, parseFlags, UsageError } from "./command.js";

const help = `svc-webhooks alerts test

Sends one test notification to ALERT_WEBHOOK_URL now (not through the queue), signed with
ALERT_SIGNING_SECRET and written as ALERT_FORMAT says, and says what the destination answered.
It is a problem.opened whose problem is plainly a test (its id starts with test_, its subject is
"alerts test") and whose body carries "test": true; with ALERT_FORMAT=slack, a message that says it
is a test (docs/operations.md, Alerts). Exits 1 when the destination does not answer 2xx.`;

const VERBS = ["test"] as const;

async function runAlerts(argv: string[], env: NodeJS.ProcessEnv): Promise<Answer> {
  const { positionals } = parseFlags({ args: argv, options: {}, allowPositionals: true, strict: true });
  const [verb, ...extra] = positionals;
  if (verb !== "test" || extra.length > 0) throw new UsageError(`alerts takes ${VERBS.join(", ")}${verb ? didYouMean(verb, VERBS) : ""}`);
  // The deployment's alert settings; SIGNING_SECRET (the edge's) is not needed to send one.
  const config = loadConfig({ ...env, ROLE: "worker" });
  const sent = await sendTestAlert(config.alerts);
  if (!sent) throw new UsageError("ALERT_WEBHOOK_URL is not set: there is nowhere to send a test notification");
  if (!sent.answer.ok) throw new CommandError(`the test notification was not delivered: ${describeAnswer(sent.answer)}`);
  return answer(sent, `test notification ${sent.webhookId} (${sent.type}) delivered: ${describeAnswer(sent.answer)}`);
}

export const alerts: Command = { help, answers: true, run: runAlerts };
