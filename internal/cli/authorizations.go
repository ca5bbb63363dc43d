package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mcp-catalog/operator/internal/gateway/personauth"
	"github.com/mcp-catalog/operator/internal/review"
)

// People's authorizations of per-person McpServers are Secrets the gateway
// writes (docs/adr/056-per-person-upstream-authorization.md). These
// commands read only their metadata, never a token: a list of Secrets'
// metadata carries no data, so even a user who may read Secrets is not
// shown one.

var secretMeta = corev1.SchemeGroupVersion.WithKind("SecretList")

// listAuthorizations returns the metadata of the authorization Secrets in
// ns (every namespace when all), of user only unless user is empty.
func listAuthorizations(ctx context.Context, c client.Client, ns string, all bool, user string) ([]metav1.PartialObjectMetadata, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(secretMeta)
	labels := client.MatchingLabels{personauth.LabelAuthorization: "true"}
	if user != "" {
		labels[personauth.LabelUserHash] = personauth.UserHash(user)
	}
	opts := []client.ListOption{labels}
	if !all {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, clusterError(err, "listing per-person authorizations (Secrets' metadata)")
	}
	items := list.Items
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Annotations[personauth.AnnotationServer]+"\x00"+a.Annotations[personauth.AnnotationUser] <
			b.Annotations[personauth.AnnotationServer]+"\x00"+b.Annotations[personauth.AnnotationUser]
	})
	return items, nil
}

func newAuthorizationsCommand(s Streams) *cobra.Command {
	f := newClusterFlags("")
	var user string
	var everyone bool
	cmd := &cobra.Command{
		Use:   "authorizations",
		Short: "List people's stored authorizations of per-person McpServers",
		Long: "authorizations lists the authorizations the gateway keeps for per-person McpServers\n" +
			"(spec.auth.perPerson): yours by default, a named person's with --person, or everyone's with\n" +
			"--all-users. Only the Secrets' metadata is read: no token is fetched or shown.",
		Example: `  kubectl mcp authorizations -n team-a
  kubectl mcp authorizations -A --all-users`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ns, err := f.client(s)
			if err != nil {
				return err
			}
			if user == "" && !everyone {
				if user, err = review.WhoAmI(cmd.Context(), c); err != nil {
					return reviewErr(err)
				}
			}
			items, err := listAuthorizations(cmd.Context(), c, ns, f.allNamespaces, user)
			if err != nil {
				return err
			}
			if len(items) == 0 {
				fmt.Fprintln(s.Err, "No authorizations found.")
				return nil
			}
			tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAMESPACE\tSERVER\tUSER\tSTATE\tUPDATED")
			for _, m := range items {
				a := m.Annotations
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Namespace, dash(a[personauth.AnnotationServer]), dash(review.OneLine(a[personauth.AnnotationUser], 512)),
					dash(a[personauth.AnnotationState]), dash(a[personauth.AnnotationUpdated]))
			}
			return tw.Flush()
		},
	}
	f.bind(cmd, true)
	cmd.Flags().StringVar(&user, "person", "", "The person (user name) whose authorizations to list (default: you).")
	cmd.Flags().BoolVar(&everyone, "all-users", false, "List everyone's authorizations.")
	return cmd
}

func newRevokeAuthorizationCommand(s Streams) *cobra.Command {
	f := newClusterFlags("")
	var user string
	cmd := &cobra.Command{
		Use:   "revoke-authorization SERVER...",
		Short: "Delete a person's stored authorization of per-person McpServers",
		Long: "revoke-authorization revokes a person's (by default your) stored tokens for the named\n" +
			"per-person McpServers at the authorization server that issued them (RFC 7009), then\n" +
			"deletes them. The Secret is deleted whatever the authorization server answers; the output\n" +
			"says whether the tokens were revoked there, the server offers no revocation endpoint, or\n" +
			"revoking failed and why. It acts with your RBAC: get and delete on the Secret (get is what\n" +
			"reading its metadata needed already) and get on the client's secret, if it has one.\n" +
			"The person's next call of the server's tools asks them to authorize it again.",
		Example: `  kubectl mcp revoke-authorization records -n team-a
  kubectl mcp revoke-authorization records -n team-a --person alice@example.com`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := f.client(s)
			if err != nil {
				return err
			}
			if user == "" {
				if user, err = review.WhoAmI(cmd.Context(), c); err != nil {
					return reviewErr(err)
				}
			}
			var errs []error
			for _, server := range args {
				out, err := revokeAuthorization(cmd.Context(), c, ns, server, user)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", server, err))
					continue
				}
				fmt.Fprintf(s.Out, "authorization of mcpserver/%s for %s revoked; %s\n", server, user, out.Words())
			}
			if len(errs) > 0 {
				return &exitError{code: ExitFailed, err: errors.Join(errs...)}
			}
			return nil
		},
	}
	f.bind(cmd, false)
	cmd.Flags().StringVar(&user, "person", "", "The person (user name) whose authorization to revoke (default: you).")
	return cmd
}

// revokeAuthorization revokes user's authorization of server in ns: its
// tokens at the authorization server (with the credentials of whoever runs
// kubectl, whose RBAC must let them read the Secret), then the Secret,
// after checking from its metadata that it is one: the name alone could
// be anyone's Secret.
func revokeAuthorization(ctx context.Context, c client.Client, ns, server, user string) (personauth.Revocation, error) {
	r := &personauth.Revoker{Client: c, Egress: personauth.LocalEgress()}
	out, err := r.Revoke(ctx, ns, server, user)
	var (
		notStored *personauth.NotStoredError
		notAuth   *personauth.NotAnAuthorizationError
	)
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &notStored), errors.As(err, &notAuth):
		return out, err
	}
	return out, clusterError(err, "revoking the authorization")
}
