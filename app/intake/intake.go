package intake

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/google/go-github/v60/github"

	"github.com/selfcode/selfcode/app/command"
	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/internal/utf8cut"
)

// Options configures a Router.
type Options struct {
	CommandWord    string // default "/selfcode"
	Label          string // starts a job now; default "selfcode"
	OvernightLabel string // schedules a job; default "selfcode:overnight"
	CheckRunName   string // selfcode's check run; default "selfcode"
	// CIApps are the slugs of the apps whose failing check runs start a
	// follow-up (SELFCODE_CI_APPS); nil: github-actions alone. Checks of
	// every other app are ignored.
	CIApps []string
	// NextWindow returns the start of the next overnight window after t.
	NextWindow func(t time.Time) time.Time
	Now        func() time.Time
}

// DefaultCIApp is the app whose failing checks start follow-ups when the
// operator names none: GitHub Actions.
const DefaultCIApp = "github-actions"

// Router maps deliveries to store submissions.
type Router struct{ o Options }

// New builds a Router.
func New(o Options) *Router {
	if o.CommandWord == "" {
		o.CommandWord = "/selfcode"
	}
	if o.Label == "" {
		o.Label = "selfcode"
	}
	if o.OvernightLabel == "" {
		o.OvernightLabel = "selfcode:overnight"
	}
	if o.CheckRunName == "" {
		o.CheckRunName = "selfcode"
	}
	if o.CIApps == nil {
		o.CIApps = []string{DefaultCIApp}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NextWindow == nil {
		o.NextWindow = func(t time.Time) time.Time {
			d := time.Date(t.Year(), t.Month(), t.Day(), 2, 0, 0, 0, time.UTC)
			if !d.After(t) {
				d = d.Add(24 * time.Hour)
			}
			return d
		}
	}
	return &Router{o: o}
}

// Decision is what a delivery asks for (installation events carry their
// record in Submission.Installation).
type Decision struct {
	Submission store.Submission
}

func ignore(reason string) (Decision, error) {
	return Decision{Submission: store.Submission{Action: store.ActionIgnore, Reason: reason}}, nil
}

func invalid(format string, a ...any) (Decision, error) {
	return Decision{}, errs.E(errs.KindInvalid, fmt.Sprintf(format, a...), nil)
}

// Route decides what one delivery of event (X-GitHub-Event) with the given
// JSON payload asks for. Malformed payloads and payloads missing what their
// event needs are KindInvalid errors.
func (r *Router) Route(event string, payload []byte) (Decision, error) {
	if event == "" {
		return invalid("missing X-GitHub-Event header")
	}
	// The payload is decoded once, below; that decode is what validates it
	// (a separate json.Valid pass would double the CPU cost of intake).
	if !isObject(payload) {
		return invalid("payload is not a JSON object")
	}
	switch event {
	case "ping", "issue_comment", "pull_request_review_comment", "pull_request_review",
		"issues", "installation", "installation_repositories", "check_run", "pull_request":
	default:
		if !json.Valid(payload) {
			return invalid("payload is not valid JSON")
		}
		return ignore(fmt.Sprintf("event %q is not handled", event))
	}
	if event == "check_run" {
		// Decoded by hand: GitHub's own published check_run example carries
		// timestamps like "2018-04-25 20:42:10" that go-github's types reject,
		// and only a few fields matter here.
		var ev checkRunEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return invalid("decode check_run payload: %v", err)
		}
		d, err := r.checkRun(&ev)
		d.Submission.Event = event
		return d, err
	}
	var parsed any
	var err error
	if event == "issue_comment" {
		parsed, err = decodeIssueComment(payload) // the hot path: see lean.go
	} else {
		parsed, err = github.ParseWebHook(event, payload)
	}
	if err != nil {
		return invalid("decode %s payload: %v", event, err)
	}
	var d Decision
	switch ev := parsed.(type) {
	case *github.PingEvent:
		d, err = ignore("ping")
	case *github.IssueCommentEvent:
		d, err = r.issueComment(ev)
	case *github.PullRequestReviewCommentEvent:
		d, err = r.reviewComment(ev)
	case *github.PullRequestReviewEvent:
		d, err = r.review(ev)
	case *github.IssuesEvent:
		d, err = r.issues(ev)
	case *github.PullRequestEvent:
		d, err = r.pullRequest(ev)
	case *github.InstallationEvent:
		d, err = r.installation(ev)
	case *github.InstallationRepositoriesEvent:
		d, err = r.installationRepos(ev)
	default:
		d, err = ignore(fmt.Sprintf("event %q is not handled", event))
	}
	if err != nil {
		return d, err
	}
	d.Submission.Event = event
	return d, nil
}

// isObject reports whether payload starts like a JSON object.
func isObject(payload []byte) bool {
	for _, c := range payload {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		}
		return false
	}
	return false
}

func repoOf(rp *github.Repository) (job.Repo, error) {
	if rp == nil || rp.GetName() == "" {
		return job.Repo{}, errs.E(errs.KindInvalid, "payload has no repository", nil)
	}
	owner := rp.GetOwner().GetLogin()
	if owner == "" {
		if i := strings.IndexByte(rp.GetFullName(), '/'); i > 0 {
			owner = rp.GetFullName()[:i]
		}
	}
	if owner == "" {
		return job.Repo{}, errs.E(errs.KindInvalid, "payload repository has no owner", nil)
	}
	return job.Repo{Owner: owner, Name: rp.GetName(), ID: rp.GetID(), DefaultBranch: rp.GetDefaultBranch(),
		CloneURL: rp.GetCloneURL(), Private: rp.GetPrivate()}, nil
}

func isBot(u *github.User) bool {
	return u != nil && (u.GetType() == "Bot" || strings.HasSuffix(u.GetLogin(), "[bot]"))
}

// commandJob builds the submission for a parsed command. A command that
// would run the pipeline on a closed pull request becomes a reply instead.
func (r *Router) commandJob(cmd command.Command, base job.Job, closed bool) (Decision, error) {
	base.Instructions = cmd.Instructions
	base.Trigger.Command = string(cmd.Verb)
	base.Trigger.ReceivedAt = r.o.Now().UTC()
	j := base
	if closed && base.IsPR && (cmd.Verb == command.VerbRun || cmd.Verb == command.VerbPlan || cmd.Verb == command.VerbFixCI) {
		j.Kind = job.KindControl
		j.Trigger.Command = "closed"
		return Decision{Submission: store.Submission{Action: store.ActionControl, Job: &j}}, nil
	}
	switch cmd.Verb {
	case command.VerbRun, command.VerbFixCI:
		j.Kind = job.KindRun
		return Decision{Submission: store.Submission{Action: store.ActionEnqueue, Job: &j}}, nil
	case command.VerbPlan:
		j.Kind = job.KindPlan
		return Decision{Submission: store.Submission{Action: store.ActionEnqueue, Job: &j}}, nil
	default: // cancel, retry, status, help: checked and answered by the control lane
		j.Kind = job.KindControl
		return Decision{Submission: store.Submission{Action: store.ActionControl, Job: &j}}, nil
	}
}

func (r *Router) issueComment(ev *github.IssueCommentEvent) (Decision, error) {
	if ev.GetAction() != "created" {
		return ignore(fmt.Sprintf("issue_comment %s: only new comments trigger", ev.GetAction()))
	}
	if ev.Issue == nil || ev.GetIssue().GetNumber() == 0 {
		return invalid("issue_comment payload has no issue")
	}
	if ev.Comment == nil {
		return invalid("issue_comment payload has no comment")
	}
	rp, err := repoOf(ev.Repo)
	if err != nil {
		return Decision{}, err
	}
	sender := ev.GetComment().GetUser()
	if ev.Sender != nil {
		sender = ev.Sender
	}
	if isBot(sender) || isBot(ev.GetComment().GetUser()) {
		return ignore("comment by a bot")
	}
	cmd, ok := command.Parse(ev.GetComment().GetBody(), r.o.CommandWord)
	if !ok {
		return ignore("comment is not a " + r.o.CommandWord + " command")
	}
	is := ev.GetIssue()
	return r.commandJob(cmd, job.Job{
		Repo: rp, Issue: is.GetNumber(), IsPR: is.IsPullRequest(),
		IssueTitle: is.GetTitle(), IssueBody: is.GetBody(), IssueURL: is.GetHTMLURL(), IssueAuthor: is.GetUser().GetLogin(),
		InstallationID: ev.GetInstallation().GetID(),
		Trigger: job.Trigger{Source: job.SourceIssueComment, Sender: sender.GetLogin(), SenderType: sender.GetType(),
			CommentID: ev.GetComment().GetID(), CommentURL: ev.GetComment().GetHTMLURL()},
	}, is.GetState() == "closed")
}

func (r *Router) reviewComment(ev *github.PullRequestReviewCommentEvent) (Decision, error) {
	if ev.GetAction() != "created" {
		return ignore(fmt.Sprintf("pull_request_review_comment %s: only new comments trigger", ev.GetAction()))
	}
	if ev.PullRequest == nil || ev.GetPullRequest().GetNumber() == 0 {
		return invalid("pull_request_review_comment payload has no pull_request")
	}
	if ev.Comment == nil {
		return invalid("pull_request_review_comment payload has no comment")
	}
	rp, err := repoOf(ev.Repo)
	if err != nil {
		return Decision{}, err
	}
	sender := ev.GetSender()
	if isBot(sender) || isBot(ev.GetComment().GetUser()) {
		return ignore("comment by a bot")
	}
	cmd, ok := command.Parse(ev.GetComment().GetBody(), r.o.CommandWord)
	if !ok {
		return ignore("comment is not a " + r.o.CommandWord + " command")
	}
	pr, c := ev.GetPullRequest(), ev.GetComment()
	return r.commandJob(cmd, job.Job{
		Repo: rp, Issue: pr.GetNumber(), IsPR: true,
		IssueTitle: pr.GetTitle(), IssueBody: pr.GetBody(), IssueURL: pr.GetHTMLURL(), IssueAuthor: pr.GetUser().GetLogin(),
		InstallationID: ev.GetInstallation().GetID(),
		Trigger: job.Trigger{Source: job.SourceReviewComment, Sender: sender.GetLogin(), SenderType: sender.GetType(),
			CommentID: c.GetID(), CommentURL: c.GetHTMLURL(), ReviewID: c.GetPullRequestReviewID(),
			Path: c.GetPath(), Line: c.GetLine(), StartLine: c.GetStartLine(), DiffHunk: c.GetDiffHunk()},
	}, pr.GetState() == "closed")
}

func (r *Router) review(ev *github.PullRequestReviewEvent) (Decision, error) {
	if ev.GetAction() != "submitted" {
		return ignore(fmt.Sprintf("pull_request_review %s: only submitted reviews trigger", ev.GetAction()))
	}
	if ev.PullRequest == nil || ev.GetPullRequest().GetNumber() == 0 || ev.Review == nil {
		return invalid("pull_request_review payload has no pull_request or review")
	}
	rp, err := repoOf(ev.Repo)
	if err != nil {
		return Decision{}, err
	}
	if isBot(ev.GetSender()) || isBot(ev.GetReview().GetUser()) {
		return ignore("review by a bot")
	}
	cmd, ok := command.Parse(ev.GetReview().GetBody(), r.o.CommandWord)
	if !ok {
		return ignore("review body is not a " + r.o.CommandWord + " command")
	}
	pr := ev.GetPullRequest()
	return r.commandJob(cmd, job.Job{
		Repo: rp, Issue: pr.GetNumber(), IsPR: true,
		IssueTitle: pr.GetTitle(), IssueBody: pr.GetBody(), IssueURL: pr.GetHTMLURL(), IssueAuthor: pr.GetUser().GetLogin(),
		InstallationID: ev.GetInstallation().GetID(),
		Trigger: job.Trigger{Source: job.SourceReview, Sender: ev.GetSender().GetLogin(), SenderType: ev.GetSender().GetType(),
			ReviewID: ev.GetReview().GetID(), CommentURL: ev.GetReview().GetHTMLURL()},
	}, pr.GetState() == "closed")
}

func (r *Router) issues(ev *github.IssuesEvent) (Decision, error) {
	action := ev.GetAction()
	if action != "labeled" && action != "unlabeled" {
		return ignore(fmt.Sprintf("issues %s does not trigger", action))
	}
	if ev.Issue == nil || ev.GetIssue().GetNumber() == 0 {
		return invalid("issues payload has no issue")
	}
	if ev.Label == nil || ev.GetLabel().GetName() == "" {
		return invalid("issues %s payload has no label", action)
	}
	rp, err := repoOf(ev.Repo)
	if err != nil {
		return Decision{}, err
	}
	name := ev.GetLabel().GetName()
	if name != r.o.Label && name != r.o.OvernightLabel {
		return ignore(fmt.Sprintf("label %q is not a selfcode label", name))
	}
	is := ev.GetIssue()
	key := job.IssueKey(rp.FullName(), is.GetNumber())
	if action == "unlabeled" {
		if name != r.o.OvernightLabel {
			return ignore(fmt.Sprintf("removing label %q cancels nothing", name))
		}
		return Decision{Submission: store.Submission{Action: store.ActionCancelOvernight, Key: key}}, nil
	}
	if isBot(ev.GetSender()) {
		return ignore("label added by a bot")
	}
	now := r.o.Now().UTC()
	j := job.Job{
		Kind: job.KindRun, Repo: rp, Issue: is.GetNumber(), IsPR: is.IsPullRequest(),
		IssueTitle: is.GetTitle(), IssueBody: is.GetBody(), IssueURL: is.GetHTMLURL(), IssueAuthor: is.GetUser().GetLogin(),
		InstallationID: ev.GetInstallation().GetID(),
		Trigger: job.Trigger{Source: job.SourceLabel, Sender: ev.GetSender().GetLogin(), SenderType: ev.GetSender().GetType(),
			Command: string(command.VerbRun), Label: name, ReceivedAt: now},
	}
	if name == r.o.OvernightLabel {
		j.Overnight = true
		j.Trigger.Source = job.SourceOvernight
		j.ScheduledFor = r.o.NextWindow(now).UTC()
	}
	return Decision{Submission: store.Submission{Action: store.ActionEnqueue, Job: &j}}, nil
}

// pullRequest cancels a closed or merged pull request's jobs.
func (r *Router) pullRequest(ev *github.PullRequestEvent) (Decision, error) {
	if ev.GetAction() != "closed" {
		return ignore(fmt.Sprintf("pull_request %s does not trigger", ev.GetAction()))
	}
	if ev.PullRequest == nil || ev.GetPullRequest().GetNumber() == 0 {
		return invalid("pull_request payload has no pull_request")
	}
	rp, err := repoOf(ev.Repo)
	if err != nil {
		return Decision{}, err
	}
	how := "closed"
	if ev.GetPullRequest().GetMerged() {
		how = "merged"
	}
	return Decision{Submission: store.Submission{Action: store.ActionCancelIssue,
		Key: job.IssueKey(rp.FullName(), ev.GetPullRequest().GetNumber()), Reason: "the pull request was " + how}}, nil
}

func (r *Router) installation(ev *github.InstallationEvent) (Decision, error) {
	in := ev.GetInstallation()
	if in.GetID() == 0 {
		return invalid("installation payload has no installation id")
	}
	rec := &store.Installation{ID: in.GetID(), Account: in.GetAccount().GetLogin()}
	for _, rp := range ev.Repositories {
		rec.Repositories = append(rec.Repositories, rp.GetFullName())
	}
	d, _ := ignore("installation " + ev.GetAction() + " recorded")
	switch ev.GetAction() {
	case "deleted":
		d.Submission.InstallationDeleted = true
	case "suspend":
		rec.Suspended = true
	}
	d.Submission.Installation = rec
	return d, nil
}

func (r *Router) installationRepos(ev *github.InstallationRepositoriesEvent) (Decision, error) {
	in := ev.GetInstallation()
	if in.GetID() == 0 {
		return invalid("installation_repositories payload has no installation id")
	}
	rec := &store.Installation{ID: in.GetID(), Account: in.GetAccount().GetLogin()}
	for _, rp := range ev.RepositoriesAdded {
		rec.Repositories = append(rec.Repositories, rp.GetFullName())
	}
	d, _ := ignore("installation repositories " + ev.GetAction() + " recorded")
	d.Submission.Installation = rec
	return d, nil
}

type checkRunEvent struct {
	Action          string `json:"action"`
	RequestedAction *struct {
		Identifier string `json:"identifier"`
	} `json:"requested_action"`
	CheckRun *struct {
		ID           int64     `json:"id"`
		Name         string    `json:"name"`
		ExternalID   string    `json:"external_id"`
		Conclusion   string    `json:"conclusion"`
		App          *checkApp `json:"app"`
		HeadSHA      string    `json:"head_sha"`
		PullRequests []struct {
			Number int `json:"number"`
		} `json:"pull_requests"`
		CheckSuite *struct {
			HeadBranch string `json:"head_branch"`
		} `json:"check_suite"`
		Output *struct {
			Title   string `json:"title"`
			Summary string `json:"summary"`
			Text    string `json:"text"`
		} `json:"output"`
	} `json:"check_run"`
	Repo         *github.Repository   `json:"repository"`
	Sender       *github.User         `json:"sender"`
	Installation *github.Installation `json:"installation"`
}

// checkRun turns Re-run and the Retry and Cancel buttons on selfcode's
// check run into control jobs on the check run's job (the worker checks
// the sender's permission, as for comments), and another check failing on
// selfcode's own pull request into a follow-up (checkFailed).
func (r *Router) checkRun(ev *checkRunEvent) (Decision, error) {
	verb := command.VerbRetry
	switch ev.Action {
	case "completed":
		return r.checkFailed(ev)
	case "rerequested":
	case "requested_action":
		id := ""
		if ev.RequestedAction != nil {
			id = ev.RequestedAction.Identifier
		}
		switch command.Verb(id) {
		case command.VerbRetry, command.VerbCancel:
			verb = command.Verb(id)
		default:
			return ignore(fmt.Sprintf("check run action %q is not selfcode's", id))
		}
	default:
		return ignore(fmt.Sprintf("check_run %s does not trigger", ev.Action))
	}
	cr := ev.CheckRun
	if cr == nil {
		return invalid("check_run payload has no check_run")
	}
	if cr.Name != r.o.CheckRunName {
		return ignore(fmt.Sprintf("check run %q is not selfcode's", cr.Name))
	}
	if job.ParseID(cr.ExternalID) != nil {
		return ignore("check run carries no selfcode job id")
	}
	rp, err := repoOf(ev.Repo)
	if err != nil {
		return Decision{}, err
	}
	if isBot(ev.Sender) {
		return ignore("check run action requested by a bot")
	}
	issue := 0
	if len(cr.PullRequests) > 0 {
		issue = cr.PullRequests[0].Number
	}
	j := job.Job{
		Kind: job.KindControl, Repo: rp, Issue: issue, IsPR: true, TargetJobID: strings.ToLower(cr.ExternalID),
		InstallationID: ev.Installation.GetID(),
		Trigger: job.Trigger{Source: job.SourceCheckRun, Sender: ev.Sender.GetLogin(), SenderType: ev.Sender.GetType(),
			Command: string(verb), ReceivedAt: r.o.Now().UTC()},
	}
	return Decision{Submission: store.Submission{Action: store.ActionControl, Job: &j}}, nil
}

// checkFailed turns another check (the repository's CI) failing on the head
// of a pull request selfcode opened into a follow-up job on that pull
// request, whose task is the failure. The runner decides whether it runs
// (the pull request is still selfcode's and its head is still that commit,
// nobody else pushed, ci_fix_attempts, the same failure never twice).
func (r *Router) checkFailed(ev *checkRunEvent) (Decision, error) {
	cr := ev.CheckRun
	if cr == nil {
		return invalid("check_run payload has no check_run")
	}
	switch {
	case cr.Name == r.o.CheckRunName:
		return ignore("selfcode's own check run")
	case cr.Conclusion != "failure" && cr.Conclusion != "timed_out":
		return ignore(fmt.Sprintf("check %q concluded %s", cr.Name, cr.Conclusion))
	case cr.CheckSuite == nil || !strings.HasPrefix(cr.CheckSuite.HeadBranch, "selfcode/") || len(cr.PullRequests) == 0:
		return ignore("a failing check on a branch selfcode did not open a pull request from")
	}
	if slug := appSlug(cr.App); !slices.Contains(r.o.CIApps, slug) {
		return ignore(fmt.Sprintf("check %q comes from the app %q, which is not in SELFCODE_CI_APPS (%s)", cr.Name, slug, strings.Join(r.o.CIApps, ", ")))
	}
	rp, err := repoOf(ev.Repo)
	if err != nil {
		return Decision{}, err
	}
	var title, summary, text string
	if cr.Output != nil {
		title, summary, text = cr.Output.Title, cr.Output.Summary, cr.Output.Text
	}
	// The task is selfcode's own words; what the check printed is kept
	// apart (Trigger.CheckOutput) and reaches the model as CI output,
	// never as instructions.
	task := fmt.Sprintf("Fix the failing CI check %q: it %s on this pull request's head commit %.12s. Make it pass without weakening the check.", cr.Name,
		map[string]string{"failure": "failed", "timed_out": "timed out"}[cr.Conclusion], cr.HeadSHA)
	var output []string
	for _, part := range []string{title, summary, text} {
		if part = strings.TrimSpace(part); part != "" {
			output = append(output, utf8cut.Cut(part, 4000))
		}
	}
	j := job.Job{
		Kind: job.KindRun, Repo: rp, Issue: cr.PullRequests[0].Number, IsPR: true, Instructions: task,
		InstallationID: ev.Installation.GetID(),
		Trigger: job.Trigger{Source: job.SourceCI, Sender: ev.Sender.GetLogin(), SenderType: ev.Sender.GetType(),
			Command: string(command.VerbRun), Check: cr.Name, CheckApp: appSlug(cr.App), CheckOutput: strings.Join(output, "\n\n"),
			HeadSHA: cr.HeadSHA, ActionsJobID: actionsJob(cr.ID, cr.App),
			Signature: failureSignature(cr.Name, title+"\n"+summary+"\n"+text), ReceivedAt: r.o.Now().UTC()},
	}
	return Decision{Submission: store.Submission{Action: store.ActionEnqueue, Job: &j}}, nil
}

// failureSignature names a failure by its check and its output with what
// changes from run to run (numbers: durations, line numbers, ids; case;
// spacing) taken out.
func failureSignature(check, output string) string {
	norm := strings.Map(func(r rune) rune {
		switch {
		case unicode.IsDigit(r):
			return -1
		case unicode.IsSpace(r):
			return ' '
		}
		return unicode.ToLower(r)
	}, output)
	sum := sha256.Sum256([]byte(check + "\x00" + strings.Join(strings.Fields(norm), " ")))
	return hex.EncodeToString(sum[:12])
}

// checkApp is the app that ran a check.
type checkApp struct {
	Slug string `json:"slug"`
	Name string `json:"name"`
}

// appSlug is the slug of the app that ran a check, lower-cased ("" when
// the payload names none).
func appSlug(app *checkApp) string {
	if app == nil {
		return ""
	}
	return strings.ToLower(app.Slug)
}

// actionsJob is the GitHub Actions job a check run is (its id), 0 for
// other apps' checks.
func actionsJob(id int64, app *checkApp) int64 {
	if appSlug(app) == DefaultCIApp {
		return id
	}
	return 0
}
