package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
)

const webhooksUsage = `usage: agentruntime webhooks <command> [flags]

  create <url>          subscribe a URL to the tenant's events (--events, --session,
                        --description); prints the signing secret, shown only by
                        this create (and, with --id, by the same create run again)
  ls                    the tenant's webhooks and their recent deliveries (--json)
  delete <webhook-id>   end a subscription
`

func runWebhooks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, webhooksUsage)
		return errUsage
	}
	verb := args[0]
	if verb == "list" {
		verb = "ls"
	}
	fs := flag.NewFlagSet("agentruntime webhooks "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cf                              clientFlags
		eventTypes, sessions, about, id string
		asJSON                          bool
	)
	cf.register(fs)
	switch verb {
	case "create":
		fs.StringVar(&eventTypes, "events", "", "event types to deliver, comma-separated (default: action.required)")
		fs.StringVar(&sessions, "session", "", "only these sessions' events, comma-separated (default: every session)")
		fs.StringVar(&about, "description", "", "what the webhook is for")
		fs.StringVar(&id, "id", "", "the webhook's id, yours to choose: the same create run again answers the same webhook and secret (safe to retry)")
		fs.BoolVar(&asJSON, "json", false, "the answer as JSON (secret included)")
	case "ls":
		fs.BoolVar(&asJSON, "json", false, "one webhook per line as JSON")
	case "delete":
	default:
		fmt.Fprintf(stderr, "agentruntime webhooks: unknown command %q\n\n%s", verb, webhooksUsage)
		return errUsage
	}
	rest, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	if (verb == "ls" && len(rest) != 0) || (verb != "ls" && len(rest) != 1) {
		fmt.Fprint(stderr, webhooksUsage)
		return errUsage
	}
	conn, err := cf.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	client := controlv1.NewControlServiceClient(conn)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	switch verb {
	case "create":
		resp, err := client.CreateWebhook(rctx, &controlv1.CreateWebhookRequest{Url: rest[0], EventTypes: splitList(eventTypes),
			SessionIds: splitList(sessions), Description: about, WebhookId: id})
		if err != nil {
			return rpcError("webhooks create", err)
		}
		if asJSON {
			b, err := protojson.Marshal(resp)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(stdout, string(b))
			return err
		}
		fmt.Fprintf(stdout, "webhook %s -> %s\nsecret  %s\n(the secret is shown only by this create: verify each delivery's webhook-signature with it, see docs/services/control.md)\n",
			resp.GetWebhook().GetWebhookId(), resp.GetWebhook().GetUrl(), resp.GetSecret())
		return nil
	case "ls":
		resp, err := client.ListWebhooks(rctx, &controlv1.ListWebhooksRequest{})
		if err != nil {
			return rpcError("webhooks ls", err)
		}
		return listWebhooks(resp, asJSON, stdout)
	default: // delete
		if _, err := client.DeleteWebhook(rctx, &controlv1.DeleteWebhookRequest{WebhookId: rest[0]}); err != nil {
			return rpcError("webhooks delete", err)
		}
		fmt.Fprintf(stdout, "webhook %s deleted\n", rest[0])
		return nil
	}
}

func listWebhooks(resp *controlv1.ListWebhooksResponse, asJSON bool, stdout io.Writer) error {
	if asJSON {
		for _, wh := range resp.GetWebhooks() {
			b, err := protojson.Marshal(wh)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, string(b))
		}
		return nil
	}
	if len(resp.GetWebhooks()) == 0 {
		_, err := fmt.Fprintln(stdout, "no webhooks")
		return err
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WEBHOOK\tURL\tEVENTS\tSESSIONS\tDELIVERED\tFAILED\tLAST")
	for _, wh := range resp.GetWebhooks() {
		last := "-"
		if ds := wh.GetRecentDeliveries(); len(ds) > 0 {
			d := ds[0]
			last = fmt.Sprintf("%s %s (attempt %d) %s", d.GetOutcome(), d.GetEventType(), d.GetAttempts(), when(d.GetAt()))
		}
		events := strings.Join(wh.GetEventTypes(), ",")
		if events == "" {
			events = "action.required"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", wh.GetWebhookId(), wh.GetUrl(), events,
			orDash(strings.Join(wh.GetSessionIds(), ",")), wh.GetDelivered(), wh.GetFailed(), last)
	}
	return tw.Flush()
}
