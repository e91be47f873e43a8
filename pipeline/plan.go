package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Plan is the planner's output (contract section 8).
type Plan struct {
	Summary   string     `json:"summary"`
	Steps     []PlanStep `json:"steps"`
	Risks     []string   `json:"risks"`
	Questions []string   `json:"questions"`
}

// PlanStep is one step of a plan.
type PlanStep struct {
	ID         string     `json:"id"`
	Title      string     `json:"title"`
	Files      []PlanFile `json:"files"`
	Acceptance []string   `json:"acceptance"`
}

// PlanFile is one file a step touches.
type PlanFile struct {
	Path    string `json:"path"`
	Action  string `json:"action"`
	Purpose string `json:"purpose"`
}

// PlanSchema is the JSON schema named "plan" sent as response_format.
var PlanSchema = json.RawMessage(`{
  "type": "object",
  "additionalProperties": false,
  "required": ["summary", "steps", "risks", "questions"],
  "properties": {
    "summary": {"type": "string"},
    "steps": {"type": "array", "items": {
      "type": "object", "additionalProperties": false,
      "required": ["id", "title", "files", "acceptance"],
      "properties": {
        "id": {"type": "string"},
        "title": {"type": "string"},
        "files": {"type": "array", "items": {
          "type": "object", "additionalProperties": false,
          "required": ["path", "action", "purpose"],
          "properties": {
            "path": {"type": "string"},
            "action": {"type": "string", "enum": ["create", "modify", "delete"]},
            "purpose": {"type": "string"}
          }}},
        "acceptance": {"type": "array", "items": {"type": "string"}}
      }}},
    "risks": {"type": "array", "items": {"type": "string"}},
    "questions": {"type": "array", "items": {"type": "string"}}
  }
}`)

// ParsePlan decodes and validates a planner reply. The error says exactly
// what is wrong so it can be sent back to the model.
func ParsePlan(text string) (*Plan, error) {
	s := strings.TrimSpace(text)
	// Servers without response_format sometimes wrap JSON in a code fence.
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(s, "```json")
		s = strings.TrimPrefix(s, "```")
		s = strings.TrimSuffix(strings.TrimSpace(s), "```")
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, fmt.Errorf("the reply is not a JSON object: %v", err)
	}
	for _, k := range []string{"summary", "steps", "risks", "questions"} {
		if _, ok := raw[k]; !ok {
			return nil, fmt.Errorf("missing required field %q", k)
		}
	}
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("the reply does not match the plan schema: %v", err)
	}
	var problems []string
	if strings.TrimSpace(p.Summary) == "" {
		problems = append(problems, "summary is empty")
	}
	if len(p.Steps) == 0 {
		problems = append(problems, "steps is empty")
	}
	for i, st := range p.Steps {
		if st.ID == "" || st.Title == "" {
			problems = append(problems, fmt.Sprintf("steps[%d] needs an id and a title", i))
		}
		for k, f := range st.Files {
			if f.Path == "" {
				problems = append(problems, fmt.Sprintf("steps[%d].files[%d].path is empty", i, k))
			}
			switch f.Action {
			case "create", "modify", "delete":
			default:
				problems = append(problems, fmt.Sprintf("steps[%d].files[%d].action is %q; it must be create, modify or delete", i, k, f.Action))
			}
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return &p, nil
}

// Files lists the distinct paths the plan touches.
func (p *Plan) Files() []string {
	seen := map[string]bool{}
	var out []string
	for _, st := range p.Steps {
		for _, f := range st.Files {
			if !seen[f.Path] {
				seen[f.Path] = true
				out = append(out, f.Path)
			}
		}
	}
	return out
}

// Text renders the plan for the editor's and fixer's prompts.
func (p *Plan) Text() string {
	var b strings.Builder
	b.WriteString(p.Summary + "\n")
	for _, st := range p.Steps {
		fmt.Fprintf(&b, "\n%s. %s\n", st.ID, st.Title)
		for _, f := range st.Files {
			fmt.Fprintf(&b, "   - %s %s: %s\n", f.Action, f.Path, f.Purpose)
		}
		for _, a := range st.Acceptance {
			fmt.Fprintf(&b, "   ✓ %s\n", a)
		}
	}
	return b.String()
}
